// Package attack replays, against a fresh `tributary serve` on loopback,
// every hostile or oversized input of issue 10: one scenario per row of the
// issue's table. Each asserts what the attacker's client gets (the exact
// gRPC code and the field or object the message names), that a second,
// legitimate client is still answered exactly, and that the server's
// goroutines and heap come back to their level afterwards.
//
// `go test ./test/attack/` (part of `make go-test`) runs every scenario at a
// small scale that takes seconds. `make attack` runs them at the issue's
// sizes (ATTACK_SCALE=full) and prints a table of what was sent, what the
// client got, the server's peak RSS and whether the scenario held. The
// package has no code of its own outside tests.
package attack
