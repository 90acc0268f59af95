package store

// EncodeOpHistogramsV1 lets the external tests write schema-1 rows.
var EncodeOpHistogramsV1 = encodeOpHistogramsV1
