package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGeneratedRegistriesAreCurrent: the engine's registries on disk are
// what scenarios' tables make; after adding a kind there, run
// `go generate ./engine`.
func TestGeneratedRegistriesAreCurrent(t *testing.T) {
	files, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join("..", "..", filepath.FromSlash(name))
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go generate ./engine)", err)
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("engine/%s is not what scenarios' tables generate: run go generate ./engine", name)
		}
	}
}

func TestTypeName(t *testing.T) {
	for _, tc := range []struct{ kind, want string }{
		{"load", "loadKind"},
		{"prefix_cache", "prefixCacheKind"},
		{"a_b_c", "aBCKind"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if got := typeName(tc.kind); got != tc.want {
				t.Errorf("typeName(%q) = %q, want %q", tc.kind, got, tc.want)
			}
		})
	}
}
