package model

import "testing"

// TestStatusEqualAndHashSeeAvailability: a change to any field of a
// target's availability, or to how many targets there are, makes two
// statuses unequal and their hashes differ, as a change to the conditions
// does: a holder that keeps only the hash must send the new availability.
func TestStatusEqualAndHashSeeAvailability(t *testing.T) {
	base := func() Status {
		return Status{
			Namespace: "auth", Name: "ext", ClusterName: "extension/auth/ext",
			Condition: Condition{Type: "Valid", Status: ConditionTrue, Reason: "Valid", Message: "Valid ExtensionService"},
			Availability: []TargetAvailability{
				{Service: "a", Port: 9001, ReadyEndpoints: 2, Weight: 80},
				{Service: "b", Port: 9001, Weight: 20, Reason: AvailabilityNoReadyEndpoints},
			},
		}
	}
	changes := map[string]func(*Status){
		"service":         func(s *Status) { s.Availability[0].Service = "c" },
		"port":            func(s *Status) { s.Availability[0].Port = 9002 },
		"ready endpoints": func(s *Status) { s.Availability[0].ReadyEndpoints = 3 },
		"weight":          func(s *Status) { s.Availability[1].Weight = 0 },
		"reason":          func(s *Status) { s.Availability[1].Reason = AvailabilityZeroWeight },
		"one fewer":       func(s *Status) { s.Availability = s.Availability[:1] },
		"none":            func(s *Status) { s.Availability = nil },
	}
	want := base()
	for name, change := range changes {
		got := base()
		change(&got)
		if want.Equal(&got) || got.Equal(&want) {
			t.Errorf("%s: Equal says the statuses are the same", name)
		}
		if want.Hash() == got.Hash() {
			t.Errorf("%s: the hashes are the same", name)
		}
	}
	same := base()
	if !want.Equal(&same) || want.Hash() != same.Hash() {
		t.Error("two equal statuses are not Equal, or hash differently")
	}
}
