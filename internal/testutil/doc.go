// Package testutil holds the polling and port helpers shared by kbroker's
// tests and its chaos harness:
//
//   - Eventually / CheckFor / Poll: poll a condition (a func() bool or a
//     func() error) with a short backoff instead of sleeping, and fail with
//     the condition's last observed state, not just "timed out".
//   - Listen: a 127.0.0.1 listener with an OS-chosen port, for code that can
//     serve on a listener it is handed (no window in which the port is free).
//   - ReservePorts: ports for a subprocess that must bind them itself. They
//     stay bound (TCP and UDP) until Release, right before the start, which
//     narrows the check-then-bind race to the child's start-up; AddrInUse
//     recognises the remaining failure so the caller retries the whole
//     start with fresh ports.
//
// It does not import package testing, so the chaos harness (a main
// package) can use Poll and ReservePorts; *testing.T satisfies TB.
//
// It imports the standard library only, and must never import a kbroker
// package, so the tests of every package may use it.
package testutil
