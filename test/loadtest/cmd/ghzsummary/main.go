// Command ghzsummary reads a ghz JSON report (`ghz -O json`) on standard
// input and prints one line: calls, requests/s, p50 and p99 latency and
// failures, then each distinct failure. It exits 1 when any call failed, so
// a load run that errs fails the script that ran it.
package main

import (
	"fmt"
	"os"

	"github.com/tributary-dev/tributary/test/loadtest/ghzreport"
)

func main() {
	rep, err := ghzreport.Read(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(rep.Summary())
	if rep.Failed() > 0 {
		fmt.Print(rep.Errors())
		os.Exit(1)
	}
}
