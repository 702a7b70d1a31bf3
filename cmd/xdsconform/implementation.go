package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/xdsconform/xdsconform/internal/infile"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/xdsconform/xdsconform/results"
)

// implFlags are the implementation metadata flags: who the target is, as
// its maintainers name it. The suite commands record it in the JSON
// report; the report command overrides what a report recorded with it.
type implFlags struct {
	file                    string
	name, org, version, url string
	contact, capabilities   []string
	loaded                  bool
	impl                    *results.Implementation
}

// implFileLimit bounds the --implementation file: a few lines are
// expected, and a wrong path should not be read whole.
const implFileLimit = 1 << 20

// implFieldLimit bounds each value, in bytes.
const implFieldLimit = 1024

func (f *implFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.file, "implementation", "", "YAML file describing the implementation under test (name, organization, version, url, contact, capabilities); the --impl-* flags override it")
	fs.StringVar(&f.name, "impl-name", "", "name of the implementation under test, recorded in the reports and credited in certification reports")
	fs.StringVar(&f.org, "impl-organization", "", "organization that maintains the implementation")
	fs.StringVar(&f.version, "impl-version", "", "version of the implementation under test")
	fs.StringVar(&f.url, "impl-url", "", "home page or repository of the implementation")
	fs.StringArrayVar(&f.contact, "impl-contact", nil, "who to ask about the results: person, team, e-mail or issue tracker (repeatable)")
	fs.StringSliceVar(&f.capabilities, "impl-capabilities", nil, "features and variants the implementation claims, comma-separated (e.g. delta-ads,xdstp)")
}

// implFile is the --implementation file's layout. Contact may be one
// string or a list.
type implFile struct {
	Name         string     `yaml:"name"`
	Organization string     `yaml:"organization"`
	Version      string     `yaml:"version"`
	URL          string     `yaml:"url"`
	Contact      stringList `yaml:"contact"`
	Capabilities stringList `yaml:"capabilities"`
}

// stringList is a YAML list of strings that may also be written as one
// string.
type stringList []string

// UnmarshalYAML takes a scalar as a list of one.
func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = []string{n.Value}
		return nil
	}
	var ss []string
	if err := n.Decode(&ss); err != nil {
		return err
	}
	*l = ss
	return nil
}

// load returns the metadata the file and flags give (nil for none), flags
// overriding the file field by field. Each problem is a usage error. The
// result is kept: every command checks its flags before it starts
// anything, and asks again when it writes the report.
func (f *implFlags) load() (*results.Implementation, error) {
	if f.loaded {
		return f.impl, nil
	}
	var fromFile *results.Implementation
	if f.file != "" {
		i, err := readImplFile(f.file)
		if err != nil {
			return nil, usageError("--implementation %s: %v", f.file, err)
		}
		fromFile = i
	}
	flags := &results.Implementation{Name: f.name, Organization: f.org, Version: f.version, URL: f.url,
		Contact: f.contact, Capabilities: f.capabilities}
	for _, v := range []struct{ flag, value string }{
		{"--impl-name", f.name}, {"--impl-organization", f.org}, {"--impl-version", f.version}, {"--impl-url", f.url},
	} {
		if err := checkImplValue(v.value); err != nil {
			return nil, usageError("%s: %v", v.flag, err)
		}
	}
	if f.url != "" {
		if err := results.CheckURL(f.url); err != nil {
			return nil, usageError("--impl-url: %v", err)
		}
	}
	for _, list := range []struct {
		flag   string
		values []string
	}{{"--impl-contact", f.contact}, {"--impl-capabilities", f.capabilities}} {
		for _, v := range list.values {
			if err := checkImplValue(v); err != nil {
				return nil, usageError("%s: %v", list.flag, err)
			}
		}
	}
	f.impl, f.loaded = fromFile.Merge(flags), true
	return f.impl, nil
}

// readImplFile reads and checks an --implementation file. Unknown keys
// are errors, so that a misspelt one is not dropped in silence.
func readImplFile(path string) (*results.Implementation, error) {
	b, err := infile.ReadAll(context.Background(), path, implFileLimit)
	var tooLarge *infile.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("larger than %d KiB", implFileLimit>>10)
	case err != nil:
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err // the flag's message names the path
		}
		return nil, err
	}
	var doc implFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	i := &results.Implementation{Name: doc.Name, Organization: doc.Organization, Version: doc.Version, URL: doc.URL,
		Contact: doc.Contact, Capabilities: doc.Capabilities}
	for _, v := range append([]string{i.Name, i.Organization, i.Version, i.URL}, append(i.Contact, i.Capabilities...)...) {
		if err := checkImplValue(v); err != nil {
			return nil, err
		}
	}
	if i.URL != "" {
		if err := results.CheckURL(i.URL); err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
	}
	if i.Empty() {
		return nil, errors.New("names nothing (want keys name, organization, version, url, contact, capabilities)")
	}
	return i, nil
}

// checkImplValue rejects a value no report could show as given: one with
// line breaks or control characters, or longer than implFieldLimit.
func checkImplValue(v string) error {
	if len(v) > implFieldLimit {
		return fmt.Errorf("%q… is longer than %d bytes", v[:32], implFieldLimit)
	}
	if strings.ContainsFunc(v, unicode.IsControl) {
		return fmt.Errorf("%q: want one line without control characters", v)
	}
	return nil
}
