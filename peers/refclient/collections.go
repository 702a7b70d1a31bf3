package refclient

import (
	"fmt"
	"strings"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/wire"
)

// List collections (xRFC TP1 §List): a client pointed at
// xdstp://A/envoy.config.listener.v3.ListenerCollection/P subscribes to
// that one resource, then to every listener its entries locate, and
// follows the list as it changes (COLL-2).

// listenerCollection is the list collection type of listeners; it
// travels on the listener service.
var listenerCollection = wire.ListenerCollection

// knownType finds the type of type URL u: one of wire's, or the listener
// collection.
func (c *Client) knownType(u string) (wire.Type, bool) {
	if u == listenerCollection.URL {
		return listenerCollection, true
	}
	return wire.TypeByExactURL(u)
}

// rootIsCollection reports whether the client is pointed at a list
// collection of listeners rather than at one listener.
func (c *Client) rootIsCollection() bool {
	if !xdstp.Is(c.root) {
		return false
	}
	n, err := xdstp.Parse(c.root)
	return err == nil && n.TypeURL() == listenerCollection.URL
}

// collectionRefs are the listeners a collection's entries locate; inline
// entries (COLL-3) are not followed by this client. With the
// collection-frozen fault the refs of the first version stay (in store).
func (c *Client) collectionRefs(lc *listener.ListenerCollection) ([]ref, error) {
	var refs []ref
	for i, e := range lc.GetEntries() {
		l := e.GetLocator()
		if l == nil {
			continue // an inline entry
		}
		n, err := xdstp.FromLocator(l)
		if err != nil {
			return nil, fmt.Errorf("collection entry %d: %w", i, err)
		}
		if n.TypeURL() != wire.Listener.URL {
			return nil, fmt.Errorf("collection entry %d locates %q, which is no listener", i, strings.TrimPrefix(n.Resource(), xdstp.Scheme))
		}
		refs = append(refs, ref{wire.Listener.URL, n.Resource()})
	}
	return refs, nil
}
