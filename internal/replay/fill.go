package replay

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/transcript"
)

// A recording holds no secret: every credential in it is the redaction
// placeholder (transcript.RedactedSecret), as a string or as the bytes of
// that string. What a replay sends must still work, so the placeholders
// are filled with generated material of the kind the field needs: a
// TLS certificate's redacted private key becomes a freshly generated key
// with a self-signed certificate to match (its chain is replaced too, or
// the pair would not load), session ticket keys random keys of the size
// Envoy requires, any other secret a random token.

// IsPlaceholder reports whether s is the redaction placeholder.
func IsPlaceholder(s string) bool { return s == transcript.RedactedSecret }

// sessionTicketKeyBytes is the size Envoy requires of a TLS session
// ticket key.
const sessionTicketKeyBytes = 80

// Filler fills placeholders. One filler generates one key pair, lazily,
// and hands it to every certificate it fills: a replay needs keys that
// load, not distinct ones. It is safe for concurrent use.
type Filler struct {
	once    sync.Once
	keyPEM  []byte
	certPEM []byte
	genErr  error
}

// KeyPair is the generated private key and certificate, as PEM.
func (f *Filler) KeyPair() (keyPEM, certPEM []byte, err error) {
	f.once.Do(func() { f.keyPEM, f.certPEM, f.genErr = selfSigned() })
	return f.keyPEM, f.certPEM, f.genErr
}

// Fill replaces every placeholder in m, at any depth and inside Anys, in
// place, and returns how many it replaced.
func (f *Filler) Fill(m proto.Message) (int, error) {
	if m == nil {
		return 0, nil
	}
	return f.fill(m.ProtoReflect())
}

func (f *Filler) fill(m protoreflect.Message) (int, error) {
	if m.Descriptor().FullName() == "google.protobuf.Any" {
		return f.fillAny(m)
	}
	n := 0
	if c, ok := m.Interface().(*tlsv3.TlsCertificate); ok {
		k, err := f.fillCertificate(c)
		if err != nil {
			return n, err
		}
		n += k
	}
	if k, ok := m.Interface().(*tlsv3.TlsSessionTicketKeys); ok {
		for _, ds := range k.GetKeys() {
			if placeholder(ds) {
				ds.Specifier = &core.DataSource_InlineBytes{InlineBytes: random(sessionTicketKeyBytes)}
				n++
			}
		}
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		var k int
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if fd.Message() != nil {
					k, err = f.fill(l.Get(i).Message())
				} else if nv, ok := fillScalar(fd, l.Get(i)); ok {
					l.Set(i, nv)
					k = 1
				}
				n += k
				if err != nil {
					return false
				}
			}
		case fd.IsMap():
			mp := v.Map()
			mp.Range(func(key protoreflect.MapKey, mv protoreflect.Value) bool {
				k = 0
				if fd.MapValue().Message() != nil {
					k, err = f.fill(mv.Message())
				} else if nv, ok := fillScalar(fd.MapValue(), mv); ok {
					mp.Set(key, nv)
					k = 1
				}
				n += k
				return err == nil
			})
		case fd.Message() != nil:
			k, err = f.fill(v.Message())
			n += k
		default:
			if nv, ok := fillScalar(fd, v); ok {
				m.Set(fd, nv)
				n++
			}
		}
		return err == nil
	})
	return n, err
}

// fillAny fills inside an Any, encoding it again when anything changed.
func (f *Filler) fillAny(m protoreflect.Message) (int, error) {
	a, ok := m.Interface().(*anypb.Any)
	if !ok || a.GetTypeUrl() == "" {
		return 0, nil
	}
	inner, err := a.UnmarshalNew()
	if err != nil {
		return 0, nil // a type this binary does not link: nothing of ours to fill
	}
	n, err := f.fill(inner.ProtoReflect())
	if err != nil || n == 0 {
		return 0, err
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(inner)
	if err != nil {
		return 0, fmt.Errorf("encoding %s again after filling it: %w", a.GetTypeUrl(), err)
	}
	a.Value = b
	return n, nil
}

// fillCertificate gives a certificate whose private key was redacted the
// generated key and a certificate chain that matches it.
func (f *Filler) fillCertificate(c *tlsv3.TlsCertificate) (int, error) {
	if !placeholder(c.GetPrivateKey()) {
		return 0, nil
	}
	key, cert, err := f.KeyPair()
	if err != nil {
		return 0, err
	}
	c.PrivateKey = &core.DataSource{Specifier: &core.DataSource_InlineBytes{InlineBytes: key}}
	c.CertificateChain = &core.DataSource{Specifier: &core.DataSource_InlineBytes{InlineBytes: cert}}
	n := 1
	if placeholder(c.GetPassword()) {
		// The generated key is not encrypted.
		c.Password = nil
		n++
	}
	return n, nil
}

// placeholder reports whether a data source holds the placeholder inline.
func placeholder(ds *core.DataSource) bool {
	return ds != nil && (IsPlaceholder(string(ds.GetInlineBytes())) && ds.GetInlineBytes() != nil || IsPlaceholder(ds.GetInlineString()))
}

// fillScalar is a generated value for a placeholder string or bytes.
func fillScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if IsPlaceholder(v.String()) {
			return protoreflect.ValueOfString("xdsconform-replay-" + hex.EncodeToString(random(16))), true
		}
	case protoreflect.BytesKind:
		if IsPlaceholder(string(v.Bytes())) {
			return protoreflect.ValueOfBytes(random(32)), true
		}
	}
	return v, false
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}

// selfSigned generates an ECDSA P-256 key and a certificate for it,
// valid for a day from an hour ago (clocks differ), for localhost.
func selfSigned() (keyPEM, certPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating a key for the redacted one: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, nil, fmt.Errorf("generating a serial number: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "xdsconform replay (generated for a redacted key)"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-signing the generated key: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the generated key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
