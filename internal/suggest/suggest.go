// Package suggest finds the closest known name to a misspelt one, for "did you mean" hints.
package suggest

import "strings"

// Closest returns the candidate nearest to name (edit distance at most 2, or sharing a prefix of three or more
// characters), or "" when none is close enough. Ties go to the earlier candidate.
func Closest(name string, candidates []string) string {
	best, bestDist := "", 3
	lower := strings.ToLower(name)
	for _, c := range candidates {
		d := distance(lower, strings.ToLower(c))
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" && len(name) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(c, name) || strings.HasPrefix(name, c) {
				return c
			}
		}
	}
	return best
}

// Hint returns ` (did you mean "x"?)` for the closest candidate, or "".
func Hint(name string, candidates []string) string {
	if c := Closest(name, candidates); c != "" && c != name {
		return ` (did you mean "` + c + `"?)`
	}
	return ""
}

// distance is the Levenshtein distance between a and b, counted in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
