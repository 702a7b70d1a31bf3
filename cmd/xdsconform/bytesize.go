package main

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag value in bytes, written as a number with an optional
// binary unit: 67108864, 64MiB, 64M, 512KiB.
type byteSize int

// byteUnits are the units a byteSize may carry, longest first so that
// "MiB" is not read as "B".
var byteUnits = []struct {
	suffix string
	n      int64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
}

// String renders the size in the largest unit that divides it.
func (b *byteSize) String() string {
	n := int64(*b)
	for _, u := range byteUnits[:3] {
		if n >= u.n && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// Set parses s; the size must be positive and at most maxByteSize.
func (b *byteSize) Set(s string) error {
	n, err := parseSize(s, maxByteSize)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// parseSize parses a size in bytes with an optional binary unit; it must
// be positive and at most most.
func parseSize(s string, most int64) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.n
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive size in bytes, e.g. 64MiB")
	}
	if n > most/mult {
		b := byteSize(most)
		return 0, fmt.Errorf("at most %s", b.String())
	}
	return n * mult, nil
}

// memorySize is a flag value in bytes, like byteSize, for a memory budget:
// at most maxMemorySize.
type memorySize int64

const maxMemorySize = 1 << 40

func (m *memorySize) String() string { b := byteSize(*m); return b.String() }

func (m *memorySize) Set(s string) error {
	n, err := parseSize(s, maxMemorySize)
	if err != nil {
		return err
	}
	*m = memorySize(n)
	return nil
}

func (m *memorySize) Type() string { return "size" }

// Type names the value in the flag's help.
func (b *byteSize) Type() string { return "size" }

// maxByteSize caps a size: a gRPC message limit is an int, and a harness
// that accepts a message of gigabytes bounds nothing.
const maxByteSize = 1 << 30

// maxRecvSizeHelp documents --max-recv-size, the same for both roles but
// for which peer's messages it bounds.
func maxRecvSizeHelp(from string) string {
	return "largest message accepted from " + from + " (e.g. 64MiB); xDS sets no limit, so a bigger one ends the scenario with an error saying so, not a failure"
}

// maxStatusSizeHelp documents --max-status-size.
const maxStatusSizeHelp = "largest status view read from the client, one /config_dump body or CSDS response (e.g. 32MiB); " +
	"a bigger one ends the scenario with an error saying so, not a failure, since the harness could not look"
