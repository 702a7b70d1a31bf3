package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/wire"
)

// seedFile is what -seed reads: a node and the resources to serve it, a
// gRPC client's chain from a listener to its endpoints, each built as
// xdsconform's scenarios build them (package wire).
//
//	node: bug-client
//	resources:
//	  - {type: LDS, name: my-service, ref: my-route}
//	  - {type: RDS, name: my-route, ref: my-cluster}
//	  - {type: CDS, name: my-cluster, revision: 2}
//	  - {type: EDS, name: my-cluster}
type seedFile struct {
	Node      string         `yaml:"node"`
	Resources []seedResource `yaml:"resources"`
}

// seedResource is one resource of a seed file. Ref is the name it points
// to (a listener's route, a route's cluster); Revision (default 1) is
// what makes its content change from one reload to the next.
type seedResource struct {
	Type     string `yaml:"type"`
	Name     string `yaml:"name"`
	Ref      string `yaml:"ref"`
	Revision int    `yaml:"revision"`
}

// maxSeedBytes bounds a seed file.
const maxSeedBytes = 1 << 20

// readSeed reads and checks a seed file.
func readSeed(path string) (*seedFile, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxSeedBytes {
		return nil, fmt.Errorf("%s: want a regular file of at most %d KiB", path, maxSeedBytes>>10)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s seedFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Node == "" {
		return nil, fmt.Errorf("%s: no node: name the node id the client sends (its bootstrap's node.id)", path)
	}
	for i, r := range s.Resources {
		if _, err := r.build(); err != nil {
			return nil, fmt.Errorf("%s: resources[%d]: %w", path, i, err)
		}
	}
	return &s, nil
}

// build is the resource r describes.
func (r seedResource) build() (proto.Message, error) {
	rev := max(r.Revision, 1)
	if r.Name == "" {
		return nil, fmt.Errorf("no name")
	}
	switch strings.ToUpper(r.Type) {
	case "LDS":
		if r.Ref == "" {
			return nil, fmt.Errorf("LDS %s: ref names its route", r.Name)
		}
		return wire.ClientListener(r.Name, r.Ref, rev), nil
	case "RDS":
		if r.Ref == "" {
			return nil, fmt.Errorf("RDS %s: ref names its cluster", r.Name)
		}
		return wire.ClientRoute(r.Name, r.Ref, rev), nil
	case "CDS":
		return wire.ClientCluster(r.Name, rev), nil
	case "EDS":
		return wire.ClientEndpoints(r.Name, rev), nil
	}
	return nil, fmt.Errorf("type %q: want LDS, RDS, CDS or EDS", r.Type)
}

// apply makes the fixture serve exactly what s lists for its node: it sets
// every resource (a changed revision is a change the server pushes) and
// deletes those set by the previous apply that s no longer lists.
func (s *seedFile) apply(ctx context.Context, fx fixture.Fixture, previous *seedFile) error {
	kept := map[string]bool{}
	for _, r := range s.Resources {
		m, _ := r.build() // checked by readSeed
		t, _ := wire.TypeByShort(strings.ToUpper(r.Type))
		a, err := anypb.New(m)
		if err != nil {
			return err
		}
		if _, err := fx.Set(ctx, s.Node, t, r.Name, a); err != nil {
			return fmt.Errorf("setting %s %s: %w", t.Short, r.Name, err)
		}
		kept[t.Short+" "+r.Name] = true
	}
	if previous == nil {
		return nil
	}
	for _, r := range previous.Resources {
		t, _ := wire.TypeByShort(strings.ToUpper(r.Type))
		if previous.Node == s.Node && kept[t.Short+" "+r.Name] {
			continue
		}
		if err := fx.Delete(ctx, previous.Node, t, r.Name); err != nil {
			return fmt.Errorf("deleting %s %s: %w", t.Short, r.Name, err)
		}
	}
	return nil
}
