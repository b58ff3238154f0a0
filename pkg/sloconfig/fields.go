package sloconfig

import "github.com/gleaner-sh/gleaner/internal/jsonfields"

// Finding is a note about a key that does not stop it from applying: an unknown field, a field matched only
// ignoring case, a field given twice (internal/jsonfields, which reads the keys as encoding/json and Koordinator do).
type Finding = jsonfields.Finding
