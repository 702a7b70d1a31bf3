// Package wording writes the bits of English that the harness's messages
// share: the indefinite article before a word or an acronym ("an EDS
// response", "a CDS response") and a count with its noun ("1 scenario
// run", "2 scenario runs"). Messages name xDS types by acronym and count
// what varies, so getting these right by hand at every call site is where
// "a EDS" and "1 scenario runs" come from.
package wording

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// A returns phrase preceded by its indefinite article: "an EDS response",
// "a CDS response", "an error", "a response". See Article.
func A(phrase string) string { return Article(phrase) + " " + phrase }

// Article returns "a" or "an", whichever goes before phrase.
//
// An acronym (its first two letters capitals: EDS, LDS, URL, ADS) is read
// letter by letter, so the sound of its first letter's name decides: "an
// EDS", "an LDS", "an RDS", "an SDS", "a CDS", "a VHDS", "a URL". Any other
// word goes by its first letter, with the usual exceptions of a vowel
// letter sounding as a consonant ("a unique", "a one-off") and a silent h
// ("an hour"), and an x before a consonant said by its name ("an xdstp://
// name"). A number goes by how it is said: "an 8", "an 11", "an 18",
// "a 2". Leading quotes and brackets are passed over.
func Article(phrase string) string {
	w := firstWord(phrase)
	if w == "" {
		return "a"
	}
	if vowelSound(w) {
		return "an"
	}
	return "a"
}

// firstWord is phrase's first run of letters and digits, after any
// leading punctuation.
func firstWord(phrase string) string {
	start := strings.IndexFunc(phrase, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
	if start < 0 {
		return ""
	}
	rest := phrase[start:]
	end := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if end < 0 {
		return rest
	}
	return rest[:end]
}

// vowelSound reports whether w, a word, acronym or number, is said
// starting with a vowel sound.
func vowelSound(w string) bool {
	first, size := utf8.DecodeRuneInString(w)
	if unicode.IsDigit(first) {
		// 8, 80, 800…: "eight"; 11 and 18 (and 11,000…, said "eleven
		// thousand"): "eleven", "eighteen".
		if first == '8' {
			return true
		}
		return (strings.HasPrefix(w, "11") || strings.HasPrefix(w, "18")) && (len(w)-2)%3 == 0
	}
	second, _ := utf8.DecodeRuneInString(w[size:])
	if unicode.IsUpper(first) && (unicode.IsUpper(second) || unicode.IsDigit(second) || len(w) == size) {
		// An acronym or a lone capital: said by the letter's name.
		return strings.ContainsRune("AEFHILMNORSX", first)
	}
	lower := strings.ToLower(w)
	if len(lower) > 1 && lower[0] == 'x' && !strings.ContainsRune("aeiou", rune(lower[1])) {
		return true // "xds", "xdstp": said "ex-dee-ess"
	}
	for _, p := range consonantVowels {
		if strings.HasPrefix(lower, p) {
			return false
		}
	}
	for _, p := range silentH {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	return strings.ContainsRune("aeiou", unicode.ToLower(first))
}

// Words that start with a vowel letter said as a consonant ("a unique
// name", "a one-off"), and with a silent h ("an hour").
var (
	consonantVowels = []string{"uni", "use", "usu", "uti", "ubiq", "eu", "one", "once"}
	silentH         = []string{"hour", "honest", "honor", "honour", "heir"}
)

// N returns n followed by noun, in the plural unless n is 1: "1 scenario
// run", "2 scenario runs", "0 failures", "3 entries". The plural is
// English's regular one, made on the phrase's last word (see Plural);
// Count takes an irregular one.
func N[I Integer](n I, noun string) string { return Count(n, noun, Plural(noun)) }

// Count returns n followed by one if n is 1, else by many.
func Count[I Integer](n I, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(int64(n), 10) + " " + many
}

// Integer is any integer type a count comes in.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32
}

// Plural returns the regular English plural of noun, a word or a phrase
// whose last word is the noun: "run" → "runs", "entry" → "entries",
// "pass" → "passes", "stale known-failing entry" → "stale known-failing
// entries". Acronyms take a plain "s" ("NACK" → "NACKs").
func Plural(noun string) string {
	if noun == "" {
		return noun
	}
	last := noun[strings.LastIndexAny(noun, " -/")+1:]
	if last != "" && strings.ToUpper(last) == last && strings.ToLower(last) != last {
		return noun + "s" // an acronym
	}
	lower := strings.ToLower(noun)
	switch {
	case strings.HasSuffix(lower, "s"), strings.HasSuffix(lower, "x"), strings.HasSuffix(lower, "z"),
		strings.HasSuffix(lower, "ch"), strings.HasSuffix(lower, "sh"):
		return noun + "es"
	case strings.HasSuffix(lower, "y") && len(lower) > 1 && !strings.ContainsRune("aeiou", rune(lower[len(lower)-2])):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

// Duration writes how long the harness waited for something, rounded to
// what a reader needs: the timer that ended a wait fires a little after
// its deadline, and "5.000183s" says no more than "5s". Waits of a second
// or more are rounded to 10ms, shorter ones to the millisecond.
func Duration(d time.Duration) string {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
