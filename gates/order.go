package gates

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/expr-lang/expr"
)

// inKeyOrder replaces expr's keys, values and toPairs, which list a map in
// Go's random iteration order, with versions that list it by sorted key:
// the observations a gate records over values(runs) then come in the same
// order on every evaluation, so identical runs give identical reports and
// "tightest" never depends on the map's order.
var inKeyOrder = []expr.Option{
	expr.Function("keys", func(args ...any) (any, error) {
		return mapInKeyOrder("keys", args, func(k, _ reflect.Value) any { return k.Interface() })
	}, new(func(map[string]any) []any)),
	expr.Function("values", func(args ...any) (any, error) {
		return mapInKeyOrder("values", args, func(_, v reflect.Value) any { return v.Interface() })
	}, new(func(map[string]any) []any)),
	expr.Function("toPairs", func(args ...any) (any, error) {
		return mapInKeyOrder("toPairs", args, func(k, v reflect.Value) any { return []any{k.Interface(), v.Interface()} })
	}, new(func(map[string]any) []any)),
}

func mapInKeyOrder(name string, args []any, item func(k, v reflect.Value) any) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("%s: expected 1 argument, got %d", name, len(args))
	}
	m := reflect.ValueOf(args[0])
	if m.Kind() != reflect.Map {
		return nil, fmt.Errorf("%s: expected a map, got %T", name, args[0])
	}
	keys := m.MapKeys()
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i].Interface()) < fmt.Sprint(keys[j].Interface()) })
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = item(k, m.MapIndex(k))
	}
	return out, nil
}
