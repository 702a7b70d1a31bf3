package transcript

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The safety net behind Redact. Redact replaces credentials where the
// protobuf descriptors say they are; but a secret can reach an artefact
// by another road (a resource field dumped by a fixture's revision paths,
// a target echoing a token back in a gRPC status, a NACK detail). Every
// value Redact replaces, and every header value the user marks, is
// remembered for the whole run, and Scrub replaces each of them wherever
// it appears in text bound for a report.
const (
	// MinSecretLen is the length below which a value is not remembered:
	// scrubbing "admin" or "true" from every message would hide what the
	// reports are for, and a secret that short is no secret.
	MinSecretLen = 8
	// maxRememberedBytes bounds the memory of remembered forms, so a
	// target serving a flood of distinct secrets cannot grow the harness
	// without limit. Past it new secrets are counted, not remembered (the
	// descriptor-driven redaction still removes them from transcripts).
	maxRememberedBytes = 4 << 20
	// maxTypeURL bounds a type URL quoted for an Any whose contents are
	// withheld.
	maxTypeURL = 256
)

// memory is the run-wide set of remembered secrets.
var memory = &secretStore{forms: map[string]bool{}}

type secretStore struct {
	mu        sync.Mutex
	forms     map[string]bool
	size      int // bytes of forms
	forgotten int // secrets not remembered past maxRememberedBytes
	replacer  *strings.Replacer
}

// RememberSecret makes Scrub replace s, in every form a report can show
// it in (as is, JSON- and Go-quoted, base64, line by line), from now on
// for the rest of the process. Values shorter than MinSecretLen are
// ignored.
func RememberSecret(s string) { memory.add(stringForms(s)) }

// rememberBytes remembers a bytes-valued secret: its base64 forms (how
// JSON renders bytes) and, if it is text, its text forms.
func rememberBytes(b []byte) {
	forms := base64Forms(b)
	if utf8.Valid(b) {
		forms = append(forms, stringForms(string(b))...)
	}
	memory.add(forms)
}

// ForgottenSecrets is how many secrets were not remembered because the
// memory was full.
func ForgottenSecrets() int {
	memory.mu.Lock()
	defer memory.mu.Unlock()
	return memory.forgotten
}

func (st *secretStore) add(forms []string) {
	if len(forms) == 0 {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var fresh []string
	n := 0
	for _, f := range forms {
		if len(f) >= MinSecretLen && f != RedactedSecret && !st.forms[f] && !slices.Contains(fresh, f) {
			fresh = append(fresh, f)
			n += len(f)
		}
	}
	if len(fresh) == 0 {
		return
	}
	if st.size+n > maxRememberedBytes {
		st.forgotten++
		return
	}
	for _, f := range fresh {
		st.forms[f] = true
	}
	st.size += n
	st.replacer = nil
}

// current returns the replacer for what is remembered now, or nil when
// nothing is.
func (st *secretStore) current() *strings.Replacer {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.forms) == 0 {
		return nil
	}
	if st.replacer == nil {
		forms := make([]string, 0, len(st.forms))
		for f := range st.forms {
			forms = append(forms, f)
		}
		// strings.Replacer tries its pairs in argument order at each
		// position: longest first, so a secret is replaced whole and not
		// only the one of its lines that matches first.
		slices.SortFunc(forms, func(a, b string) int {
			if len(a) != len(b) {
				return len(b) - len(a)
			}
			return strings.Compare(a, b)
		})
		pairs := make([]string, 0, 2*len(forms))
		for _, f := range forms {
			pairs = append(pairs, f, RedactedSecret)
		}
		st.replacer = strings.NewReplacer(pairs...)
	}
	return st.replacer
}

// Scrub returns s with every remembered secret replaced by
// RedactedSecret. Every string bound for an artefact goes through it.
func Scrub(s string) string {
	r := memory.current()
	if r == nil || s == "" {
		return s
	}
	return r.Replace(s)
}

// scrubJSON scrubs a rendered JSON message. Should a secret span JSON
// syntax (a hostile target can choose one that does), the replacement
// could break the document: then the message is withheld whole.
func scrubJSON(b json.RawMessage) json.RawMessage {
	r := memory.current()
	if r == nil || len(b) == 0 {
		return b
	}
	out := r.Replace(string(b))
	if out == string(b) {
		return b
	}
	if !json.Valid([]byte(out)) {
		return json.RawMessage(strconv.Quote("message withheld: it held a secret that could not be cut out cleanly"))
	}
	return json.RawMessage(out)
}

// ScrubEntries returns a copy of entries with every remembered secret
// replaced in their messages and notes.
func ScrubEntries(entries []Entry) []Entry {
	if len(entries) == 0 || memory.current() == nil {
		return entries
	}
	out := make([]Entry, len(entries))
	for i, e := range entries {
		e.Message = scrubJSON(e.Message)
		e.Note = Scrub(e.Note)
		out[i] = e
	}
	return out
}

// stringForms are the ways a report can spell s.
func stringForms(s string) []string {
	if len(s) < MinSecretLen || s == RedactedSecret {
		return nil
	}
	forms := []string{s, unquote(strconv.Quote(s)), unquote(strconv.QuoteToASCII(s))}
	if b, err := json.Marshal(s); err == nil {
		forms = append(forms, unquote(string(b)))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) == nil {
		forms = append(forms, unquote(strings.TrimSpace(buf.String())))
	}
	if b, err := protojson.Marshal(wrapperspb.String(s)); err == nil {
		forms = append(forms, unquote(string(b)))
	}
	// A secret split over lines (a PEM key) can be cut at a line by a
	// renderer that shows a message's first line or truncates it: each
	// line long enough to be one is a secret of its own.
	if strings.Contains(s, "\n") {
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); len(l) >= MinSecretLen {
				forms = append(forms, l)
			}
		}
	}
	return append(forms, base64Forms([]byte(s))...)
}

func base64Forms(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return []string{
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
	}
}

// unquote strips the quotes of a quoted string, keeping its escapes: the
// escaped body is what appears inside quoted text.
func unquote(q string) string {
	if len(q) >= 2 && q[0] == '"' && q[len(q)-1] == '"' {
		return q[1 : len(q)-1]
	}
	return q
}

// Header names whose values are credentials whatever the user says:
// gRPC call metadata and HTTP headers carried in resources
// (HeaderValue, HeaderMatcher) named like these are redacted.
var (
	defaultSensitiveHeaders = []string{"authorization", "proxy-authorization", "cookie", "set-cookie"}
	sensitiveHeaderWords    = []string{"token", "secret", "password", "passwd", "api-key", "apikey", "api_key", "credential", "authorization", "cookie"}
)

var markedHeaders = struct {
	mu    sync.RWMutex
	names map[string]bool
}{names: map[string]bool{}}

// MarkSensitiveHeaders adds header names (case-insensitive) whose values
// are secrets, as the user gives them with --redact-header, for the rest
// of the process.
func MarkSensitiveHeaders(names ...string) {
	markedHeaders.mu.Lock()
	defer markedHeaders.mu.Unlock()
	for _, n := range names {
		markedHeaders.names[strings.ToLower(strings.TrimSpace(n))] = true
	}
}

// IsSensitiveHeader reports whether a header's value is a secret: a name
// the user marked, or one that names a credential (authorization, a
// cookie, anything with token, secret, password, api key or credential
// in its name).
func IsSensitiveHeader(name string) bool {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return false
	}
	markedHeaders.mu.RLock()
	marked := markedHeaders.names[name]
	markedHeaders.mu.RUnlock()
	if marked || slices.Contains(defaultSensitiveHeaders, name) {
		return true
	}
	for _, w := range sensitiveHeaderWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// credentialValue matches header values shaped like a credential, under
// whatever name they come: an HTTP authentication scheme and its
// parameters (RFC 9110 section 11: Bearer, Basic, Digest, Negotiate, and
// the schemes of common APIs), or a JSON Web Token.
var credentialValue = regexp.MustCompile(`(?i)^\s*(?:(?:bearer|basic|digest|negotiate|ntlm|token|apikey|api-key|key|hoba|mutual|dpop|aws4-hmac-sha256|hmac|signature)\s+\S{8,}|eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*)`)

// IsCredentialValue reports whether a header value is shaped like a
// credential (an authentication scheme and its parameters, a JSON Web
// Token), so that it is redacted whatever its header is called
// (x-custom-auth: Bearer …), beside the names IsSensitiveHeader knows.
func IsCredentialValue(v string) bool { return credentialValue.MatchString(v) }

// IsSensitiveHeaderValue reports whether the value of header name is a
// secret: by the header's name (IsSensitiveHeader) or by its shape
// (IsCredentialValue).
func IsSensitiveHeaderValue(name, value string) bool {
	return IsSensitiveHeader(name) || IsCredentialValue(value)
}

// RememberHeaders remembers the values of the sensitive headers in md
// (gRPC call metadata the harness sends or receives), by name or by
// shape, so a target that echoes one back cannot put it in a report.
func RememberHeaders(md map[string]string) {
	for k, v := range md {
		if IsSensitiveHeaderValue(k, v) {
			RememberSecret(v)
		}
	}
}
