package gates

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/expr-lang/expr/builtin"
)

// stepBytes is what one iteration of a predicate (all, map, filter, …)
// costs: the element it may add to a result. It bounds the iterations of
// an evaluation to maxBytes/stepBytes, which expr's own budget does not when
// a predicate walks a list that already exists (nested loops over samples).
const stepBytes = 16

// callBytes is charged on top of every allocating builtin's bound: a call
// allocates its result's header however small the result.
const callBytes = 64

// step is called after each iteration of a predicate body (the strict patch
// wraps every body in __step) and returns the body's value. It has the one
// signature expr calls without reflection, so it fails by panicking, which
// the VM turns into the evaluation's error (errBudget still wrapped).
func (r *recorder) step(v any) any {
	if err := r.tick(); err != nil {
		panic(err)
	}
	if err := r.alloc(stepBytes, "the iterations of its predicates"); err != nil {
		panic(err)
	}
	return v
}

// allocating are expr's builtins whose result grows with their input, with
// an upper bound of the bytes each would allocate, charged before it runs:
// expr's budget counts elements, not bytes, and nothing for these, so
// map(1..1000000, toJSON(runs)) would otherwise reach gigabytes.
var allocating = map[string]func(args []any) int{
	"toJSON":     func(a []any) int { return textSize(arg(a, 0), 1, maxBytes) },
	"string":     func(a []any) int { return textSize(arg(a, 0), 0, maxBytes) },
	"join":       joinSize,
	"upper":      func(a []any) int { return 2 * strLen(arg(a, 0)) },
	"lower":      func(a []any) int { return 2 * strLen(arg(a, 0)) },
	"replace":    replaceSize,
	"split":      splitSize,
	"splitAfter": splitSize,
	"toBase64":   func(a []any) int { return 4*strLen(arg(a, 0))/3 + 4 },
	"fromBase64": func(a []any) int { return strLen(arg(a, 0)) },
	"fromJSON":   func(a []any) int { return 16 * strLen(arg(a, 0)) },
	"keys":       func(a []any) int { return 16 * collLen(arg(a, 0)) },
	"values":     func(a []any) int { return 16 * collLen(arg(a, 0)) },
	"toPairs":    func(a []any) int { return 64 * collLen(arg(a, 0)) },
	"fromPairs":  func(a []any) int { return 64 * collLen(arg(a, 0)) },
	"uniq":       func(a []any) int { return 32 * collLen(arg(a, 0)) },
	"median":     func(a []any) int { return 8 * collLen(arg(a, 0)) },
}

// guarded returns the budgeted versions of the allocating builtins, for
// one evaluation: each ticks the clock, charges its bound, then runs expr's
// own builtin, so a gate gets the same result it always got.
func guarded(r *recorder) map[string]any {
	out := make(map[string]any, len(allocating))
	for _, b := range builtin.Builtins {
		size, ok := allocating[b.Name]
		if !ok {
			continue
		}
		name, call := b.Name, builtinCall(b)
		// func(...any) any is called without reflection (see step).
		out[name] = func(args ...any) any {
			if err := r.tick(); err != nil {
				panic(err)
			}
			if err := r.alloc(callBytes+size(args), name); err != nil {
				panic(err)
			}
			v, err := call(args)
			if err != nil {
				panic(err)
			}
			return v
		}
	}
	return out
}

// builtinCall adapts a builtin's implementation, whichever form it has.
func builtinCall(b *builtin.Function) func([]any) (any, error) {
	return func(args []any) (res any, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, fmt.Errorf("%s: %v", b.Name, p)
			}
		}()
		switch {
		case b.Func != nil:
			return b.Func(args...)
		case b.Fast != nil:
			if len(args) != 1 {
				return nil, fmt.Errorf("%s: want 1 argument, got %d", b.Name, len(args))
			}
			return b.Fast(args[0]), nil
		case b.Safe != nil:
			v, _, err := b.Safe(args...)
			return v, err
		}
		return nil, fmt.Errorf("%s: no implementation", b.Name)
	}
}

func arg(a []any, i int) any {
	if i < len(a) {
		return a[i]
	}
	return nil
}

func strLen(v any) int {
	s, _ := v.(string)
	return len(s)
}

func collLen(v any) int {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array:
		return rv.Len()
	}
	return 0
}

func joinSize(a []any) int {
	sep := strLen(arg(a, 1))
	n, total := 0, 0
	rv := reflect.ValueOf(arg(a, 0))
	if rv.Kind() != reflect.Slice {
		return 0
	}
	for i := range rv.Len() {
		n++
		total += textSize(rv.Index(i).Interface(), 0, maxBytes-total) + sep
		if total > maxBytes {
			return total
		}
	}
	return total
}

func replaceSize(a []any) int {
	s, _ := arg(a, 0).(string)
	old, _ := arg(a, 1).(string)
	repl, _ := arg(a, 2).(string)
	if len(repl) <= len(old) {
		return len(s)
	}
	n := strings.Count(s, old) // len(s)+1 for an empty old
	return len(s) + n*(len(repl)-len(old))
}

func splitSize(a []any) int {
	s, _ := arg(a, 0).(string)
	sep, _ := arg(a, 1).(string)
	return 32 * (strings.Count(s, sep) + 1)
}

// textSize is an upper bound of the bytes of v written as JSON indented
// by two spaces at the given depth (indent 0: compact), or written with
// %v: strings as if every byte were escaped, numbers as their longest
// form. It stops counting once past limit, so sizing a bomb costs no more
// than the budget it would exceed.
func textSize(v any, indent, limit int) int {
	size := 0
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if size > limit {
			return
		}
		sep := 2 // ", " or ",\n"
		if indent > 0 {
			sep += 2 * (depth + 1)
		}
		switch x := v.(type) {
		case string:
			size += 6*len(x) + 2
		case nil, bool:
			size += 5
		case float64, float32, int, int64, int32, uint, uint64, uint32:
			size += 24
		case map[string]any:
			size += 6
			for k, e := range x {
				size += 6*len(k) + 4 + sep
				walk(e, depth+1)
				if size > limit {
					return
				}
			}
		case []any:
			size += 4
			for _, e := range x {
				size += sep
				walk(e, depth+1)
				if size > limit {
					return
				}
			}
		default:
			rv := reflect.ValueOf(v)
			switch rv.Kind() {
			case reflect.Slice, reflect.Array:
				size += 4
				for i := range rv.Len() {
					size += sep
					walk(rv.Index(i).Interface(), depth+1)
					if size > limit {
						return
					}
				}
			case reflect.Map:
				size += 6
				it := rv.MapRange()
				for it.Next() {
					size += sep + 4
					walk(it.Key().Interface(), depth+1)
					walk(it.Value().Interface(), depth+1)
					if size > limit {
						return
					}
				}
			default:
				size += 64 + 6*len(fmt.Sprint(v)) // times, durations: short
			}
		}
	}
	walk(v, indent)
	return size
}
