// Package allowlist keeps the per-task parameter allow list of SPEC §6 and evaluates receive filters against it.
//
// A List maps each parameter name to an ordered set of values, de-duplicated by Canonical text, plus a sealed
// flag. A task seals the names its agent bound (Seal) and adds every resolved call argument before the backend
// runs (AddAll). An inbound event passes a filter if some assignment of listed values to the parameters the
// filter references makes it true:
//
//	f := allowlist.NewFilter(prog)             // once, at load
//	d := f.Prepare(ctx, vars)                  // once per delivery: evaluates equality conjuncts
//	out := list.Match(ctx, d, 0)               // per task: usually one evaluation
//
// A Delivery can be matched against the lists of many tasks; its Keys are what a router indexes tasks by.
package allowlist
