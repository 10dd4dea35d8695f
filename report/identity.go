package report

import (
	"fmt"
	"sort"
)

// IdentityDiff names the fields of the scenario identity that differ from
// old to new: "phases.decode.max_tokens" for a changed value,
// "phases.again (only in NEW)" and "phases.prefill (only in OLD)" for a
// field one side lacks (the paths under it are folded into one), where
// OLD and NEW are oldName and newName ("the baseline", "the report"). It
// is empty when the SHA-256s agree. When they differ but a side carries no
// per-field identity (a report from a tollgate before it), the one entry
// says so.
func IdentityDiff(old, new ScenarioInfo, oldName, newName string) []string {
	if old.SHA256 == new.SHA256 {
		return nil
	}
	if len(old.Identity) == 0 || len(new.Identity) == 0 {
		which := oldName
		if len(old.Identity) != 0 {
			which = newName
		}
		return []string{fmt.Sprintf("sha256 (%s %.12s, %s %.12s; %s has no scenario.identity to name the fields: it was written by an older tollgate)",
			oldName, old.SHA256, newName, new.SHA256, which)}
	}
	var changed, onlyOld, onlyNew []string
	for k, v := range old.Identity {
		w, ok := new.Identity[k]
		switch {
		case !ok:
			onlyOld = append(onlyOld, k)
		case v != w:
			changed = append(changed, k)
		}
	}
	for k := range new.Identity {
		if _, ok := old.Identity[k]; !ok {
			onlyNew = append(onlyNew, k)
		}
	}
	out := changed
	for _, side := range []struct {
		paths []string
		other map[string]string
		name  string
	}{{onlyOld, new.Identity, oldName}, {onlyNew, old.Identity, newName}} {
		for _, p := range fold(side.paths, side.other) {
			out = append(out, p+" (only in "+side.name+")")
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		// Equal fields under unequal hashes: only the order of phases
		// or a field this tollgate does not list can differ.
		out = []string{fmt.Sprintf("sha256 (%s %.12s, %s %.12s)", oldName, old.SHA256, newName, new.SHA256)}
	}
	return out
}

// fold replaces the paths under a common parent that other lacks entirely
// by that parent: a phase added is one entry, not one per key.
func fold(paths []string, other map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		if hasUnder(other, p) {
			// An empty map or list on this side, with fields on the
			// other: those fields say what changed.
			continue
		}
		top := p
		for parent := parentPath(p); parent != "" && !hasUnder(other, parent); parent = parentPath(parent) {
			top = parent
		}
		if !seen[top] {
			seen[top] = true
			out = append(out, top)
		}
	}
	return out
}

// parentPath is path without its last .key, [index] or ["key"]; "" at the top.
func parentPath(path string) string {
	depth := 0
	for i := len(path) - 1; i >= 0; i-- {
		switch path[i] {
		case ']':
			depth++
		case '[':
			depth--
			if depth == 0 {
				return path[:i]
			}
		case '.':
			if depth == 0 {
				return path[:i]
			}
		case '"':
			// Inside a quoted key, [ ] and . do not count: skip to its start.
			i--
			for i >= 0 && (path[i] != '"' || (i > 0 && path[i-1] == '\\')) {
				i--
			}
		}
	}
	return ""
}

// hasUnder reports whether m has a field under path, or path itself.
func hasUnder(m map[string]string, path string) bool {
	if _, ok := m[path]; ok {
		return true
	}
	for k := range m {
		if len(k) > len(path) && k[:len(path)] == path && (k[len(path)] == '.' || k[len(path)] == '[') {
			return true
		}
	}
	return false
}
