// Package testflags adjusts the testing package's flags from a TestMain.
package testflags

import (
	"flag"
	"strconv"
)

// WaitBoundParallel lets n parallel tests run at once, unless the command line set -parallel. It is for packages
// whose parallel tests spend their time waiting on real timeouts of real processes and servers, not on the CPU:
// there the default, GOMAXPROCS, leaves a 2-core machine idle while they sleep. Call it from TestMain, before m.Run.
func WaitBoundParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
