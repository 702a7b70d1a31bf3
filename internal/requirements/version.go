package requirements

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

// document is the shipped requirements.md, the source catalog.tsv is
// generated from. It is embedded only to be hashed: the catalogue a
// verdict was judged against is named by its exact text, so that two
// reports citing the same rule IDs can be told apart when the rules'
// wording changed between them.
//
//go:embed requirements.md
var document []byte

// catalogueVersion is computed once: the document is fixed at build time.
var catalogueVersion = func() string {
	sum := sha256.Sum256(document)
	return "sha256:" + hex.EncodeToString(sum[:])
}()

// CatalogueVersion names the requirements catalogue built into this binary:
// "sha256:" and the hex SHA-256 of requirements.md as shipped. The
// catalogue has no release numbers of its own, and a hash cannot drift
// from the text the way a hand-kept number could.
func CatalogueVersion() string { return catalogueVersion }
