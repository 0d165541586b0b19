package main

import tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"

// outputAvailability is --type availability: per ExtensionService, which
// target Services carry traffic. It is a shape of Tributary's own, since
// Contour's status has no such field: it stays out of the status List (and
// out of --type all), so that List is exactly what Contour would write.

// availabilityJSON is one ExtensionService's availability. Services is
// never null: an ExtensionService whose targets did not resolve (its
// status says why) has none.
type availabilityJSON struct {
	Namespace string                   `json:"namespace"`
	Name      string                   `json:"name"`
	Services  []targetAvailabilityJSON `json:"services"`
}

// targetAvailabilityJSON is tributary.v1.TargetAvailability.
type targetAvailabilityJSON struct {
	Service        string `json:"service"`
	Port           int32  `json:"port"`
	ReadyEndpoints uint32 `json:"readyEndpoints"`
	Weight         uint32 `json:"weight"`
	// Reason is why the Service carries no traffic (NoReadyEndpoints,
	// ZeroWeight); absent when it carries some.
	Reason string `json:"reason,omitempty"`
}

// availabilityOf lists every ExtensionService of resp, in the statuses'
// order, with its targets' availability. The list is never null.
func availabilityOf(resp *tributaryv1.TranslateResponse) []availabilityJSON {
	out := []availabilityJSON{}
	for _, s := range resp.GetStatuses() {
		a := availabilityJSON{Namespace: s.GetNamespace(), Name: s.GetName(), Services: []targetAvailabilityJSON{}}
		for _, t := range s.GetAvailability() {
			a.Services = append(a.Services, targetAvailabilityJSON{
				Service: t.GetService(), Port: t.GetPort(), ReadyEndpoints: t.GetReadyEndpoints(), Weight: t.GetWeight(), Reason: t.GetReason(),
			})
		}
		out = append(out, a)
	}
	return out
}
