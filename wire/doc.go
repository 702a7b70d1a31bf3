// Package wire is the xDS vocabulary shared by both fake peers: protocol
// variants, the v3 resource types with their type URLs and gRPC methods,
// builders for minimal valid resources, and helpers that read names and
// versions out of discovery messages.
//
// Nothing here opens a connection; the fake client and fake server build on
// it so that a type URL or a method name is spelled in exactly one place.
package wire
