package fakeclient

import (
	"maps"
	"slices"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/wire"
)

// Locator is a subscription with dynamic parameters (xRFC TP2): a
// ResourceLocator for name.
func Locator(name string, params map[string]string) *discovery.ResourceLocator {
	return &discovery.ResourceLocator{Name: name, DynamicParameters: maps.Clone(params)}
}

// SubscribeLocators adds subscriptions by resource locator, each with its
// dynamic parameters (DYN-2): in SotW a request restating the whole
// subscription, names and locators, a locator replacing any earlier one
// of its name; in delta a request with resource_locators_subscribe.
func (c *Client) SubscribeLocators(t wire.Type, locators ...*discovery.ResourceLocator) error {
	if c.variant.IsDelta() {
		req := c.DeltaRequest(t)
		req.ResourceLocatorsSubscribe = cloneLocators(locators)
		return c.SendDelta(t, req)
	}
	c.mu.Lock()
	set := slices.DeleteFunc(cloneLocators(c.state(t).locators), func(l *discovery.ResourceLocator) bool {
		return slices.ContainsFunc(locators, func(n *discovery.ResourceLocator) bool { return n.GetName() == l.GetName() })
	})
	names := slices.Clone(c.state(t).names)
	c.mu.Unlock()
	req := c.SotWRequest(t, names)
	req.ResourceLocators = append(set, cloneLocators(locators)...)
	return c.SendSotW(t, req)
}

// UnsubscribeLocators ends subscriptions made by resource locator, each
// written as it was subscribed (LOC-1): in delta a request with
// resource_locators_unsubscribe, in SotW a request restating the
// subscription without them.
func (c *Client) UnsubscribeLocators(t wire.Type, locators ...*discovery.ResourceLocator) error {
	if c.variant.IsDelta() {
		req := c.DeltaRequest(t)
		req.ResourceLocatorsUnsubscribe = cloneLocators(locators)
		return c.SendDelta(t, req)
	}
	names := make([]string, len(locators))
	for i, l := range locators {
		names[i] = l.GetName()
	}
	return c.Unsubscribe(t, names...)
}

// Locators returns the SotW resource_locators the client currently
// subscribes with.
func (c *Client) Locators(t wire.Type) []*discovery.ResourceLocator {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cloneLocators(c.state(t).locators)
}

// cloneLocators deep-copies locators: requests are recorded and sent
// after the lock is released, so they must not share maps with the state.
func cloneLocators(ls []*discovery.ResourceLocator) []*discovery.ResourceLocator {
	if ls == nil {
		return nil
	}
	out := make([]*discovery.ResourceLocator, len(ls))
	for i, l := range ls {
		out[i] = proto.Clone(l).(*discovery.ResourceLocator)
	}
	return out
}

// locates reports whether request m subscribes by resource locator: its
// client must then take SotW Resource wrappers (DYN-1), so they are no
// TTL-5 breach on that stream.
func locates(m proto.Message) bool {
	switch req := m.(type) {
	case *discovery.DiscoveryRequest:
		return len(req.GetResourceLocators()) > 0
	case *discovery.DeltaDiscoveryRequest:
		return len(req.GetResourceLocatorsSubscribe()) > 0
	}
	return false
}
