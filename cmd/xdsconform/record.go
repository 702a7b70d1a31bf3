package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/internal/record"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
)

const recordLong = `Record the xDS conversation between a real client and a real management
server: xdsconform listens on --listen as if it were the server, dials the
server at --upstream, and forwards every discovery stream both ways (ADS and
the per-type services, SotW and Delta), the bytes of every message
unchanged, with metadata, deadlines, status codes and trailers. Point the
client at the --listen address instead of the server.

Every message and stream event is written, with its time, to the transcript
file -o, through the same redaction as every report: credentials in
resources (a TLS Secret's private key, say) and the values of headers that
carry credentials are replaced by "[redacted]", which 'xdsconform replay'
fills with generated material.

The recording stops at Ctrl-C, after --duration, or after --max-messages
messages, and writes the file (exit 0: Ctrl-C is record's normal stop, not an
interruption). Nothing recorded (no message reached the recorder): exit 1, no
file. The server cannot be reached: exit 3 with the cause. Bad
flags: exit 2.

What is kept is bounded: messages over --max-message-size end their stream
on both sides; a transcript keeps its first and last 256 KiB, saying how
much it left out between; one message is rendered in part past 64 KiB.`

const recordExample = `  # record a client of the management server on 127.0.0.1:18000
  xdsconform record --listen 127.0.0.1:19000 --upstream 127.0.0.1:18000 -o bug.json
  # ... start the client against 127.0.0.1:19000, reproduce, then Ctrl-C

  # a server on TLS, for one minute at most
  xdsconform record --listen 127.0.0.1:19000 --upstream xds.example.com:443 \
      --upstream-tls --duration 1m -o bug.json`

type recordFlags struct {
	listen, upstream, out string
	tls                   targets.TLSOptions
	duration              time.Duration
	maxMessages, maxConns int
	maxMessageSize        byteSize
	connectTimeout        time.Duration
	redactHeaders         []string
}

func newRecordCmd(out io.Writer) *cobra.Command {
	f := &recordFlags{maxMessageSize: byteSize(targets.DefaultMaxRecvSize)}
	c := &cobra.Command{
		Use:     "record --upstream HOST:PORT -o FILE [flags]",
		Short:   "Record a real client and server talking xDS, as a transcript file",
		Long:    recordLong,
		Example: recordExample,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runRecord(c, out, f)
		},
	}
	fs := c.Flags()
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "address to listen on for the client, HOST:PORT (port 0 picks one, printed at start)")
	fs.StringVar(&f.upstream, "upstream", "", "the management server's xDS address, HOST:PORT")
	fs.StringVarP(&f.out, "output", "o", "", "transcript file to write (JSON)")
	fs.BoolVar(&f.tls.Enabled, "upstream-tls", false, "connect to the server with TLS (verified against the system roots unless --upstream-tls-ca)")
	fs.StringVar(&f.tls.CAFile, "upstream-tls-ca", "", "PEM file of the CA that signed the server's certificate")
	fs.StringVar(&f.tls.CertFile, "upstream-tls-cert", "", "PEM client certificate for mutual TLS with the server")
	fs.StringVar(&f.tls.KeyFile, "upstream-tls-key", "", "PEM client key for mutual TLS with the server")
	fs.StringVar(&f.tls.ServerName, "upstream-tls-server-name", "", "name to verify in the server's certificate")
	fs.DurationVar(&f.duration, "duration", 0, "stop recording after this long (0: at Ctrl-C or --max-messages)")
	fs.IntVar(&f.maxMessages, "max-messages", 0, "stop recording after this many messages, both ways (0: no limit)")
	fs.IntVar(&f.maxConns, "max-conns", record.DefaultMaxConns, "client connections held at once (a connection counts once it has spoken; one silent for 3 s is closed); more are closed as they come")
	fs.Var(&f.maxMessageSize, "max-message-size", "largest message forwarded either way; a larger one ends its stream on both sides (ResourceExhausted)")
	fs.DurationVar(&f.connectTimeout, "connect-timeout", 5*time.Second, "how long to wait for the server to accept a connection")
	fs.StringArrayVar(&f.redactHeaders, "redact-header", nil, "a header NAME whose values are secrets, redacted in the file (repeatable; authorization, cookies and names with token, secret, password, api-key or credential always are)")
	return c
}

func (f *recordFlags) validate() error {
	switch {
	case f.upstream == "":
		return usageError("--upstream is required (the management server's HOST:PORT)")
	case f.out == "":
		return usageError("-o is required (the transcript file to write)")
	case f.duration < 0:
		return usageError("--duration must not be negative")
	case f.maxMessages < 0:
		return usageError("--max-messages must not be negative")
	case f.maxConns < 1:
		return usageError("--max-conns must be at least 1")
	case f.connectTimeout <= 0:
		return usageError("--connect-timeout must be positive")
	case (f.tls.CertFile == "") != (f.tls.KeyFile == ""):
		return usageError("--upstream-tls-cert and --upstream-tls-key go together (mutual TLS needs both)")
	case f.tls.ServerName != "" && !f.tls.Enabled && f.tls.CAFile == "" && f.tls.CertFile == "":
		return usageError("--upstream-tls-server-name needs TLS: add --upstream-tls (or --upstream-tls-ca)")
	}
	if err := checkHostPort("--upstream", f.upstream); err != nil {
		return err
	}
	if err := checkAddr("--listen", f.listen, 0); err != nil {
		return err
	}
	if fi, err := os.Stat(filepath.Dir(f.out)); err != nil || !fi.IsDir() {
		return usageError("-o %s: the directory %s does not exist", f.out, filepath.Dir(f.out))
	}
	return markSensitiveHeaders(f.redactHeaders)
}

func runRecord(c *cobra.Command, out io.Writer, f *recordFlags) error {
	if err := f.validate(); err != nil {
		return err
	}
	ctx := c.Context()
	dial, err := targets.Reach(ctx, f.upstream, f.tls, nil, f.connectTimeout)
	switch {
	case errors.Is(err, targets.ErrUnreachable):
		return &exitError{code: exitUnreachable, err: fmt.Errorf("--upstream: %w", err)}
	case err != nil:
		return usageError("--upstream: %v", err)
	}
	p, err := record.Start(record.Options{
		Listen: f.listen, Upstream: f.upstream, Dial: dial,
		MaxMessageSize: int(f.maxMessageSize), MaxConns: f.maxConns, MaxMessages: f.maxMessages,
	})
	if err != nil {
		return usageError("--listen: %v", err)
	}
	defer p.Stop()
	fmt.Fprintf(out, "recording: point the client at %s; forwarding to %s; %s\n", p.Addr(), f.upstream, f.stopWhen())
	var timer <-chan time.Time
	if f.duration > 0 {
		t := time.NewTimer(f.duration)
		defer t.Stop()
		timer = t.C
	}
	why := "interrupted"
	select {
	case <-ctx.Done():
	case <-timer:
		why = "--duration " + wording.Duration(f.duration) + " passed"
	case <-p.Full():
		why = fmt.Sprintf("%s recorded (--max-messages)", wording.N(f.maxMessages, "message"))
	}
	p.Stop()
	st := p.Stats()
	file := p.File(version)
	if st.Recorded == 0 {
		// Exit 1 is not printed by execute (a failed run has its
		// report): this one has none, so say it here. Connections that
		// carried no message are no recording either.
		cause := "no client connected to " + p.Addr()
		if st.Connections > 0 {
			cause = fmt.Sprintf("%s to %s carried no message", wording.Count(st.Connections, "connection", "connections"), p.Addr())
		}
		err := fmt.Errorf("nothing recorded (%s): %s", why, cause)
		fmt.Fprintf(c.ErrOrStderr(), "xdsconform: %v\n", err)
		return &exitError{code: exitFailures, err: err}
	}
	if err := transcript.WriteFile(f.out, file); err != nil {
		return usageError("-o: %v", err)
	}
	fmt.Fprintf(out, "recorded %s on %s over %s in %s (%s), to %s\n",
		wording.N(st.Recorded, "message"), wording.N(st.Streams, "stream"), wording.N(st.Connections, "connection"),
		wording.Duration(time.Since(file.Recorded)), why, f.out)
	if st.Forwarded > st.Recorded {
		fmt.Fprintf(out, "%s forwarded but not recorded, past --max-messages\n", wording.Count(st.Forwarded-st.Recorded, "message was", "messages were"))
	}
	if st.Refused > 0 {
		fmt.Fprintf(out, "%s refused past --max-conns %d\n", wording.Count(st.Refused, "connection was", "connections were"), f.maxConns)
	}
	return nil
}

// stopWhen says how the recording will stop.
func (f *recordFlags) stopWhen() string {
	s := "Ctrl-C stops and writes the file"
	if f.duration > 0 {
		s += ", as does " + wording.Duration(f.duration) + " passing"
	}
	if f.maxMessages > 0 {
		s += fmt.Sprintf(", as do %s", wording.N(f.maxMessages, "message"))
	}
	return s
}
