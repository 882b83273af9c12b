package expr

import (
	"fmt"
	"strconv"
)

// jsonStep is one step of a JSON path: an object member (key) or an array
// element (index, when isIndex).
type jsonStep struct {
	key     string
	index   int
	isIndex bool
}

// parseJSONPath reads the path forms the JSON functions offer: `$`, then
// any of `.key` (letters, digits, `_` and `$`), `."quoted key"` (no
// backslash escapes) and `[n]` (n ≥ 0). Wildcards (`*`, `**`), ranges
// (`[1 to 3]`), `last` and negative indexes select several values or
// count from the end; they are refused, naming the fix. The error's
// offset is into the path.
func parseJSONPath(p string) ([]jsonStep, error) {
	fail := func(at int, format string, a ...any) ([]jsonStep, error) {
		return nil, fmt.Errorf("JSON path %q at character %d: %s", p, at+1, fmt.Sprintf(format, a...))
	}
	if len(p) == 0 || p[0] != '$' {
		return fail(0, "a path starts with $ (the whole document), e.g. '$.name' or '$.items[0]'")
	}
	var steps []jsonStep
	for i := 1; i < len(p); {
		switch p[i] {
		case '.':
			i++
			if i < len(p) && p[i] == '*' {
				return fail(i, "wildcards select several values and are not offered: name one member")
			}
			if i < len(p) && p[i] == '"' {
				end := i + 1
				for end < len(p) && p[end] != '"' {
					if p[end] == '\\' {
						return fail(end, "escapes in a quoted key are not offered: write the character itself")
					}
					end++
				}
				if end == len(p) {
					return fail(i, "the quoted key has no closing \"")
				}
				steps = append(steps, jsonStep{key: p[i+1 : end]})
				i = end + 1
				continue
			}
			start := i
			for i < len(p) && isPathKeyChar(p[i]) {
				i++
			}
			if i == start {
				return fail(start, "a member name follows '.': letters, digits, _ and $, or a \"quoted key\"")
			}
			steps = append(steps, jsonStep{key: p[start:i]})
		case '[':
			start := i + 1
			end := start
			for end < len(p) && p[end] >= '0' && p[end] <= '9' {
				end++
			}
			if end == len(p) || p[end] != ']' || end == start {
				if start < len(p) && (p[start] == '*' || p[start] == '-' || p[start] == 'l') || end < len(p) && p[end] == ' ' {
					return fail(start, "wildcards, ranges, last and negative indexes are not offered: write one index [n], n ≥ 0")
				}
				return fail(start, "an array index is [n] with n a number ≥ 0")
			}
			n, err := strconv.Atoi(p[start:end])
			if err != nil || n > 1<<30 {
				return fail(start, "the array index is too large")
			}
			steps = append(steps, jsonStep{index: n, isIndex: true})
			i = end + 1
		case '*':
			return fail(i, "wildcards (** and *) select several values and are not offered: name one member")
		default:
			return fail(i, "expected .key, .\"quoted key\" or [n]")
		}
	}
	return steps, nil
}

func isPathKeyChar(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
