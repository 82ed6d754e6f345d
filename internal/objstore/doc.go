// Package objstore starts a real S3-compatible object store for tests:
// SeaweedFS's `weed mini` (master, volume, filer and S3 gateway in one
// process) on 127.0.0.1 with OS-chosen ports and a temporary directory,
// with one identity whose requests are signature-checked and one bucket,
// stopped when the test ends. A test that needs it is skipped, with the
// install command, only when no weed binary is found
// (scripts/install-weed.sh builds the pinned version; .ci/run runs it).
//
// Only tests import it. It imports internal/testutil and aws-sdk-go-v2's
// s3 (to create the bucket); it must never import a kbroker package that
// runs in the broker.
package objstore
