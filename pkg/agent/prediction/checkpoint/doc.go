// Package checkpoint keeps the agent's prediction models across restarts: a Store of opaque byte payloads, one file
// per name, in a directory on the host (a hostPath the agent's DaemonSet mounts). It knows nothing of what the
// payloads hold; the prediction module encodes its models and decides when to save (on a period and at shutdown).
//
// # Files
//
// A payload named n lives in <dir>/n.ckpt. Names are [a-z0-9._-]+ (a pod UID, "system", "priority-prod"), at most
// MaxNameLen bytes, so a name never leaves the directory. Each file is an envelope around the payload, all integers
// little-endian:
//
//	offset  size  field
//	0       4     magic "GLCK"
//	4       2     format version (1)
//	6       4     payload length in bytes
//	10      4     CRC32C (Castagnoli) of bytes 0..9 followed by the payload
//	14      n     payload
//
// A file that is shorter or longer than its length says, has another magic, or fails its checksum is ErrCorrupt; a
// version above the one this agent writes is ErrFutureFormat (an agent rolled back after a newer one saved). Either
// way the caller logs it and that model starts cold; nothing panics on any file content (FuzzDecode).
//
// # Writes
//
// Save writes <dir>/n.ckpt.<random>.tmp, fsyncs it, renames it over n.ckpt and fsyncs the directory, so after a
// crash or power loss the file holds either the previous payload or the new one, never a mix. A failed write (a
// full disk) removes its temporary file and leaves the previous file as it was. Open removes the *.tmp files an
// interrupted Save left behind.
//
// # Size
//
// The store counts the bytes of its .ckpt files and refuses a Save that would take the total over the bound given
// to Open (ErrTooLarge), counting the file being replaced out. While a Save runs, its temporary file exists beside
// the file it replaces, so the directory can briefly hold one payload more than the bound. Prune removes the files
// of names the caller no longer keeps (pods that no longer exist). Files in the directory that are not the store's
// (other names or extensions) are neither counted nor touched.
package checkpoint
