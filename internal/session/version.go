package session

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
)

// instanceID names this process: 8 random bytes, drawn once. Versions carry
// it so that a restarted server, whose counter starts again at 1, never
// hands out a version string an old session's client has already seen.
var instanceID = func() string {
	var id [8]byte
	// crypto/rand.Read never fails (it crashes the program instead).
	_, _ = rand.Read(id[:])
	return hex.EncodeToString(id[:])
}()

// versionCounter counts the versions this process has handed out, across
// every session.
var versionCounter atomic.Uint64

// NextVersion returns a version string for a session's whole output that no
// other call, in this process or in any other (a restart included), returns:
// "<instance id>-<counter>". The instance id is random, so uniqueness across
// restarts holds with overwhelming probability without any stored state.
//
// Only the version of the whole output needs this. The version of each
// Resource stays a content hash (see translate.Resource): a client caching by
// version needs "same version ⇒ same bytes", and a hash gives that by
// construction, across sessions and restarts alike. What broke in Contour is
// the opposite: a counter reset by a restart re-issued old version strings
// for new contents, so clients kept stale resources. A hash cannot do that.
func NextVersion() string {
	return instanceID + "-" + strconv.FormatUint(versionCounter.Add(1), 10)
}
