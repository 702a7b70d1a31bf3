// Package loadreport is the report of an xdsconform load run (xdsconform
// load): what the plan was, and per phase (connect, initial sync, churn,
// burst) how many pushes, ACKs and NACKs there were, push→ACK latency and
// convergence as HDR histograms, amplification, missed pushes, protocol
// violations, and what the harness itself used.
//
// Reports of the shards of one run (xdsconform load --shard I/N) merge
// exactly (Merge): counts add up, histograms merge bucket by bucket (never
// by averaging percentiles), and a change's convergence is the latest of
// its ACKs over every shard, so a merged report says what one process
// running the whole plan would have said.
//
// WriteJSON and ReadJSON write and read a report in the layout of
// reports/schema/load.schema.json (ReadJSON strict and bounded, for files
// that may come from anywhere); WriteMarkdown and WriteHTML render one for
// CI and for people; ParseSLO and SLO.Evaluate judge one against --slo
// objectives.
package loadreport

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Format is the value of every load report's "format" field. A change to
// the layout that a reader must know of bumps the version.
const Format = "xdsconform.load/v1"

// Phase names, in the order a run goes through them.
const (
	// PhaseConnect opens every stream and sends the first request.
	PhaseConnect = "connect"
	// PhaseInitialSync lasts until every client has ACKed every resource
	// of its profile.
	PhaseInitialSync = "initial-sync"
	// PhaseChurn changes resources through the fixture at the planned
	// rate for the planned duration, then waits for convergence.
	PhaseChurn = "churn"
	// PhaseBurst sets resources the clients NACK, then sets them right.
	PhaseBurst = "burst"
)

// LatencyTimed says what a phase's latency histogram times: for connect,
// from a stream's opening to its first response (when a client can start
// to work; connect sends no change, so there is no push to time); for the
// others, from a change's push to its ACK.
func LatencyTimed(phase string) string {
	if phase == PhaseConnect {
		return "stream open→first response"
	}
	return "push→ACK"
}

// PhaseNames are the phases a report may hold, in the order a run goes
// through them; ReadJSON refuses any other name.
var PhaseNames = []string{PhaseConnect, PhaseInitialSync, PhaseChurn, PhaseBurst}

// Report is one load run, or the merge of the shards of one.
type Report struct {
	// Format is Format.
	Format string `json:"format"`
	// HarnessVersion is the xdsconform version that ran it.
	HarnessVersion string `json:"harness_version"`
	// Target is the server under load, as given, with the fixture's
	// description of it when the shard had the fixture.
	Target string `json:"target"`
	// Address is the --target the shard was given (HOST:PORT, builtin:…,
	// container:…): what the shards of one run share, whether or not
	// each had the fixture that describes the server. Empty in reports
	// written before it existed.
	Address string `json:"address,omitempty"`
	// RunID names the run; the shards of one run share it.
	RunID string `json:"run_id"`
	// Plan is what was asked for.
	Plan Plan `json:"plan"`
	// Shards are the shard indexes this report covers (one for a shard's
	// own report, every index for a merged one), out of Plan.Shards.
	Shards []int `json:"shards"`
	// Started is when the run (its first shard) started.
	Started time.Time `json:"started"`
	// DurationNS is how long it ran (the longest shard), in nanoseconds.
	DurationNS int64 `json:"duration_ns"`
	// Interrupted is set when the run was cut short (Ctrl-C, a deadline).
	Interrupted bool `json:"interrupted,omitempty"`
	// Unmeasured says, one line a reason, why the run measured nothing a
	// verdict could rest on: no stream opened, a phase whose changes
	// reached no client, a fixture that set nothing. A run with any fails,
	// whatever its SLO says (SLO.Evaluate; xdsconform load exits 1 on it
	// even unjudged), so that nothing measured never reads as a pass.
	// Merged, every shard's, each named with its shard. A run interrupted
	// records none: it is not judged (a merge that holds one fails on
	// Interrupted instead).
	Unmeasured []string `json:"unmeasured,omitempty"`
	// Phases are the phases run, in order.
	Phases []Phase `json:"phases"`
	// Changes are the fixture changes made, in order: the shard that
	// drives the fixture lists every one; the others list the changes
	// their clients saw. Bounded by MaxChanges.
	Changes []Change `json:"changes"`
	// ChangesDropped counts changes made past MaxChanges, not listed
	// (merged: the most any shard dropped, plus what the merged list
	// could not hold).
	ChangesDropped int64 `json:"changes_dropped,omitempty"`
	// Timeline is per-second activity over the run, for plots.
	Timeline []Second `json:"timeline"`
	// Violations are the protocol violations seen, one per rule with a
	// count and the first instance's evidence.
	Violations []Violation `json:"violations"`
	// Harness is what the harness itself used, per shard.
	Harness []Harness `json:"harness"`
	// SLO is the verdict of --slo, when one was given.
	SLO *SLOResult `json:"slo,omitempty"`
	// Notes are things the reader must know to trust the figures (a
	// saturated harness, a fixture that fell behind, a shard missing).
	Notes []string `json:"notes,omitempty"`
}

// Phase is the phase named name, if it ran.
func (r *Report) Phase(name string) (Phase, bool) {
	i := slices.IndexFunc(r.Phases, func(p Phase) bool { return p.Name == name })
	if i < 0 {
		return Phase{}, false
	}
	return r.Phases[i], true
}

// MaxChanges bounds Report.Changes: at 100 changes a second a 100 s churn
// fits. What is past it still counts in every phase total.
const MaxChanges = 10000

// Plan is what a load run was asked to do.
type Plan struct {
	// Clients is how many simulated xDS clients the whole run has.
	Clients int `json:"clients"`
	// Nodes is how many distinct node ids they use (Clients: one each).
	Nodes int `json:"nodes"`
	// Profile names the subscription profile: grpc, envoy, or the custom
	// list as given.
	Profile string `json:"profile"`
	// Resources are the resources each client subscribes to, as
	// "TYPE/NAME" (a wildcard as "TYPE/*"), in subscription order.
	Resources []string `json:"resources"`
	// Variant is the protocol variant (sotw-ads, delta-pertype, ...).
	Variant string `json:"variant"`
	// StreamsPerConn is how many streams share one gRPC connection.
	StreamsPerConn int `json:"streams_per_conn"`
	// Churn is the planned fixture changes per second during the churn
	// phase; ChurnTypes the types they change.
	Churn      float64  `json:"churn"`
	ChurnTypes []string `json:"churn_types,omitempty"`
	// DurationNS is how long the churn lasts, in nanoseconds.
	DurationNS int64 `json:"duration_ns"`
	// NackBurst is how many bad resources the burst phase sets (0: no
	// burst phase).
	NackBurst int `json:"nack_burst,omitempty"`
	// Shards is how many shards the run was split into (1: one process).
	Shards int `json:"shards"`
	// Transcripts is the transcript policy: off, or sampled:N (one client
	// in N keeps a transcript).
	Transcripts string `json:"transcripts"`
}

// Phase is what happened in one phase of the run.
type Phase struct {
	// Name is one of the Phase constants.
	Name string `json:"name"`
	// StartNS and EndNS are offsets from Report.Started, in nanoseconds
	// (merged: the earliest start and the latest end of any shard).
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
	// Clients is how many clients took part.
	Clients int64 `json:"clients"`
	// Changes is how many fixture changes the phase made. The changes are
	// the fixture's, made once for the whole run: merged, it is the most
	// any shard says, not their sum.
	Changes int64 `json:"changes"`
	// Expected is how many pushes the changes called for: for each
	// change, the clients subscribed to the resource it changed.
	Expected int64 `json:"expected"`
	// Responses, Acks and Nacks count what the clients received and sent.
	Responses int64 `json:"responses"`
	Acks      int64 `json:"acks"`
	Nacks     int64 `json:"nacks"`
	// Resends counts responses that sent a client again a resource
	// version it had NACKed.
	Resends int64 `json:"resends"`
	// Missed counts (client, resource) pairs still behind the last change
	// to the resource when the phase ended.
	Missed int64 `json:"missed"`
	// Violations counts protocol violations seen in the phase.
	Violations int64 `json:"violations"`
	// Errors counts streams that ended with an error, and clients that
	// could not connect.
	Errors int64 `json:"errors"`
	// Latency is per (client, change): from the moment the fixture was
	// asked to set the client's node's copy of the change to the client's
	// ACK of it. NACKs (the burst's bad changes) and changes made before
	// the client first asked (its initial state) measure none. In the
	// connect phase, per stream, from opening it to its first response;
	// in the initial sync, per client, from its first request to the ACK
	// completing its profile.
	Latency *Histogram `json:"latency"`
	// Convergence is per change: from its origin (the fixture asked for
	// it, on the first node) until the last client subscribed to it ACKed
	// it. A change some client never ACKed is left out (a client may
	// legitimately skip a change superseded by the next one); a client
	// still behind a resource's last change when the phase ends is counted
	// in Missed.
	Convergence *Histogram `json:"convergence"`
	// Amplification is Responses per Expected push (0 when none were
	// expected): 1 is one response per change per client.
	Amplification float64 `json:"amplification"`
}

// Change is one fixture change and what the clients did with it.
type Change struct {
	// ID numbers the changes of a run from 1 (0 is the initial state).
	ID int64 `json:"id"`
	// Phase is the phase that made it.
	Phase string `json:"phase"`
	// Resource is the resource changed, "TYPE/NAME".
	Resource string `json:"resource"`
	// Bad marks a change the clients are meant to NACK (burst phase).
	Bad bool `json:"bad,omitempty"`
	// OriginUnixNS is when the change was asked of the fixture, wall
	// clock, as carried in the resource.
	OriginUnixNS int64 `json:"origin_unix_ns"`
	// Expected is how many clients (of the shards covered) subscribe to
	// the resource; Acked how many ACKed this change (or NACKed it, when
	// Bad) before the phase ended.
	Expected int64 `json:"expected"`
	Acked    int64 `json:"acked"`
	// LastAckNS is the latest ACK of it, from its origin; 0 when none.
	LastAckNS int64 `json:"last_ack_ns"`
}

// Second is the activity of one second of the run, counted from Started.
type Second struct {
	// UnixS is the second, wall clock (Unix seconds), so that the shards
	// of a run line up exactly when merged.
	UnixS int64 `json:"unix_s"`
	// Responses, Acks and Nacks are counted as in Phase.
	Responses int64 `json:"responses"`
	Acks      int64 `json:"acks"`
	Nacks     int64 `json:"nacks"`
	// LatencyCount, LatencySumNS and LatencyMaxNS are over the push→ACK
	// latencies measured in the second (mean = sum / count; not every
	// ACK has one: an ACK of a response bringing no change, or of a
	// client's initial state, has none), so shards merge exactly.
	LatencyCount int64 `json:"latency_count"`
	LatencySumNS int64 `json:"latency_sum_ns"`
	LatencyMaxNS int64 `json:"latency_max_ns"`
}

// Violation is one rule broken during the run.
type Violation struct {
	// Rule is the catalogue ID; Level its level.
	Rule  string `json:"rule"`
	Level string `json:"level"`
	// Count is how many times it was seen (by the clients that check it).
	Count int64 `json:"count"`
	// Message is the first instance, with its evidence (redacted, bounded).
	Message string `json:"message"`
	// Client names the client that saw the first instance.
	Client string `json:"client"`
	// Transcript is that client's transcript when it kept one (sampled),
	// rendered and bounded like a suite report's.
	Transcript json.RawMessage `json:"transcript,omitempty"`
}

// Harness is what one shard of the harness used: so that a saturated
// harness is never taken for a slow server.
type Harness struct {
	// Shard is the shard's index.
	Shard int `json:"shard"`
	// Streams is the most xDS streams it held at once.
	Streams int64 `json:"streams"`
	// CPUSeconds is the process's user+system CPU time over the run;
	// CPUPercent that over the run's wall time (100 = one core busy).
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUPercent float64 `json:"cpu_percent"`
	// Cores is GOMAXPROCS.
	Cores int `json:"cores"`
	// PeakRSSBytes is the process's peak resident set (0 where the OS
	// does not say), BaselineRSSBytes its resident set before the first
	// connection, and BytesPerStream what each stream added: the
	// difference over Streams. A target run in-process (a built-in) is in
	// the same process: its memory is then in these figures too.
	PeakRSSBytes     int64 `json:"peak_rss_bytes"`
	BaselineRSSBytes int64 `json:"baseline_rss_bytes"`
	BytesPerStream   int64 `json:"bytes_per_stream"`
	// InProcessTarget is set when the target ran in the harness's
	// process, sharing its CPU and memory figures.
	InProcessTarget bool `json:"in_process_target,omitempty"`
	// HeapBytes is the Go heap in use at the peak of streams.
	HeapBytes int64 `json:"heap_bytes"`
	// Saturated is set when the harness was the bottleneck (CPU near all
	// cores, or its own scheduling lag past a bound): its latencies then
	// say more about the harness than about the server.
	Saturated bool `json:"saturated,omitempty"`
	// LagMaxNS is the worst delay the harness saw in its own timer ticks
	// (a measure of its scheduling lag).
	LagMaxNS int64 `json:"lag_max_ns"`
}

// SLOResult is the verdict of --slo.
type SLOResult struct {
	// Spec is the --slo text.
	Spec string `json:"spec"`
	// OK is set when every objective held.
	OK bool `json:"ok"`
	// Objectives are each objective and its verdict.
	Objectives []Objective `json:"objectives"`
}

// Objective is one objective of an SLO and its verdict.
type Objective struct {
	// Text is the objective as written ("p99<500ms").
	Text string `json:"text"`
	// Phase is the phase judged ("" for the whole run).
	Phase string `json:"phase,omitempty"`
	// Value is the measured value, in the objective's unit, as text.
	Value string `json:"value"`
	// OK is set when it held.
	OK bool `json:"ok"`
}

// Histogram is an HDR histogram of durations, in microseconds from 1 µs
// to HistogramMax, to 3 significant digits. Its JSON carries the summary
// (count, min, max, mean, p50, p90, p99, p999, in nanoseconds) for
// readers, and the whole histogram in the standard HDR compressed
// encoding ("hdr", base64) so reports merge exactly. It is safe for
// concurrent use; its zero value is an empty histogram.
type Histogram struct {
	mu sync.Mutex
	h  *hdr.Histogram
	// over counts values past HistogramMax, recorded as HistogramMax.
	over int64
}

// HistogramMax is the largest duration a Histogram tells apart: longer
// ones are recorded as it (and counted in Over).
const HistogramMax = 10 * time.Minute

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	h := &Histogram{}
	h.init()
	return h
}

// Record adds one duration. Durations under 1 µs count as 1 µs.
func (h *Histogram) Record(d time.Duration) {
	us := d.Microseconds()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	if us < 1 {
		us = 1
	}
	if us > HistogramMax.Microseconds() {
		us = HistogramMax.Microseconds()
		h.over++
	}
	_ = h.h.RecordValue(us) // in range by construction
}

// Merge adds every value of o (exactly: bucket by bucket).
func (h *Histogram) Merge(o *Histogram) {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.init()
	snap := o.h.Export()
	over := o.over
	o.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	h.h.Merge(hdr.Import(snap))
	h.over += over
}

// Count is how many values were recorded.
func (h *Histogram) Count() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	return h.h.TotalCount()
}

// Quantile is the value at quantile q (0.99 for p99); 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	if h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.ValueAtQuantile(q*100)) * time.Microsecond
}

// Max is the largest value recorded (to the histogram's precision).
func (h *Histogram) Max() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	if h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.Max()) * time.Microsecond
}

// init makes the zero Histogram usable; h.mu must be held.
func (h *Histogram) init() {
	if h.h == nil {
		h.h = hdr.New(1, HistogramMax.Microseconds(), 3)
	}
}

// Summary is a histogram's JSON form.
type Summary struct {
	Count  int64 `json:"count"`
	MinNS  int64 `json:"min_ns"`
	MeanNS int64 `json:"mean_ns"`
	P50NS  int64 `json:"p50_ns"`
	P90NS  int64 `json:"p90_ns"`
	P99NS  int64 `json:"p99_ns"`
	P999NS int64 `json:"p999_ns"`
	MaxNS  int64 `json:"max_ns"`
	// Over counts values past HistogramMax (recorded as it).
	Over int64 `json:"over,omitempty"`
	// HDR is the histogram in the HDR compressed encoding, base64, in
	// microseconds.
	HDR string `json:"hdr"`
}

// Summary returns the histogram's summary and encoding.
func (h *Histogram) Summary() (Summary, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	enc, err := h.h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return Summary{}, fmt.Errorf("encoding histogram: %w", err)
	}
	s := Summary{Count: h.h.TotalCount(), Over: h.over, HDR: string(enc)}
	if s.Count > 0 {
		us := func(v int64) int64 { return v * int64(time.Microsecond) }
		s.MinNS = us(h.h.Min())
		s.MeanNS = int64(h.h.Mean() * float64(time.Microsecond))
		s.P50NS = us(h.h.ValueAtQuantile(50))
		s.P90NS = us(h.h.ValueAtQuantile(90))
		s.P99NS = us(h.h.ValueAtQuantile(99))
		s.P999NS = us(h.h.ValueAtQuantile(99.9))
		s.MaxNS = us(h.h.Max())
	}
	return s, nil
}

// MarshalJSON writes the Summary.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	s, err := h.Summary()
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// UnmarshalJSON reads a Summary back from its HDR encoding (the summary
// figures are recomputed from it, so a hand-edited figure cannot disagree
// with the histogram). The encoding is checked before it is decoded: it
// must be of this package's range, hold at most MaxHistogramCount values,
// and Over must be within them.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var s Summary
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return err
	}
	if len(s.HDR) > maxEncoded {
		return fmt.Errorf("histogram encoding of %d bytes is past the %d-byte bound", len(s.HDR), maxEncoded)
	}
	d, err := decode([]byte(s.HDR))
	if err != nil {
		return fmt.Errorf("histogram encoding: %w", err)
	}
	if n := d.TotalCount(); n < 0 || n > MaxHistogramCount {
		return fmt.Errorf("histogram of %d values: at most %d", n, int64(MaxHistogramCount))
	}
	if s.Over < 0 || s.Over > d.TotalCount() {
		return fmt.Errorf("histogram over %d: not within its %d values", s.Over, d.TotalCount())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.h, h.over = d, s.Over
	return nil
}

// maxEncoded bounds a histogram's encoding when read: a full one of this
// range is a few KiB compressed.
const maxEncoded = 1 << 20

// MaxHistogramCount bounds the values a histogram read from JSON may hold:
// 2^40 (a million clients ACKing a million changes) is past any run, and
// keeps the sum of the histograms of as many shards as a plan may have
// (MaxShards) far from overflowing.
const MaxHistogramCount = 1 << 40

// hdrHeaderSize is the size of the header inside an HDR V2 encoding's
// compressed contents: cookie, payload length, normalising offset and
// significant digits (int32 each), lowest and highest trackable values
// (int64 each), and the integer-to-double ratio (float64).
const hdrHeaderSize = 40

// decode reads an encoding into a histogram of this package's range, so
// that a histogram of another range (from another tool) is refused
// rather than merged wrongly. The range is read from the header before
// the library decodes anything: the library allocates the counts of
// whatever range a header claims (1 to 2^63 at 5 digits is 48 MB), so a
// few hostile bytes could otherwise cost that much per histogram.
func decode(enc []byte) (h *hdr.Histogram, err error) {
	if err := checkHeader(enc); err != nil {
		return nil, err
	}
	defer func() {
		// The library has trusted its input's header before (index out of
		// range on crafted counts); whatever it still trusts must not
		// bring the reader down.
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("malformed: %v", r)
		}
	}()
	d, err := hdr.Decode(enc)
	if err != nil {
		return nil, err
	}
	if d.LowestTrackableValue() != 1 || d.HighestTrackableValue() != HistogramMax.Microseconds() || d.SignificantFigures() != 3 {
		return nil, fmt.Errorf("range [%d, %d] µs at %d digits, not [1, %d] at 3", d.LowestTrackableValue(), d.HighestTrackableValue(), d.SignificantFigures(), HistogramMax.Microseconds())
	}
	return d, nil
}

// checkHeader reads the range out of an HDR V2 compressed encoding
// (base64 of: cookie, length, zlib of header and counts) and refuses
// one of another range than this package's, inflating only the header.
func checkHeader(enc []byte) error {
	raw, err := base64.StdEncoding.DecodeString(string(enc))
	if err != nil {
		return err
	}
	if len(raw) < 8 {
		return fmt.Errorf("%d bytes: too short", len(raw))
	}
	if cookie := int32(binary.BigEndian.Uint32(raw)) &^ 0xf0; cookie != hdr.V2CompressedEncodingCookieBase {
		return fmt.Errorf("cookie %#x: not an HDR V2 compressed encoding", cookie)
	}
	n := int64(int32(binary.BigEndian.Uint32(raw[4:])))
	if n < 0 || n > int64(len(raw)-8) {
		return fmt.Errorf("compressed length %d: %d bytes follow", n, len(raw)-8)
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8 : 8+n]))
	if err != nil {
		return err
	}
	defer z.Close()
	var head [hdrHeaderSize]byte
	if _, err := io.ReadFull(z, head[:]); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	digits := int32(binary.BigEndian.Uint32(head[12:]))
	low := int64(binary.BigEndian.Uint64(head[16:]))
	high := int64(binary.BigEndian.Uint64(head[24:]))
	if low != 1 || high != HistogramMax.Microseconds() || digits != 3 {
		return fmt.Errorf("range [%d, %d] µs at %d digits, not [1, %d] at 3", low, high, digits, HistogramMax.Microseconds())
	}
	return nil
}
