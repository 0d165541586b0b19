package server

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
)

// TestWireTranslateResponse holds the answer's fast encoding to protobuf:
// each Result encodes to the bytes proto.Marshal makes of its messages
// (encodeResult), of the length sizeTranslateResponse says.
func TestWireTranslateResponse(t *testing.T) {
	cases := map[string]*translate.Result{
		// Nothing to say: an empty message.
		"empty": {},
		// What the benchmark and most calls answer.
		"standard workload": translate.Translate(workload.Standard(20, 3), source.Settings{}),
		// An invalid ExtensionService: errors and warnings, no resources.
		"every status field": {Statuses: []model.Status{everyStatusField()}},
		// Zero values are left out, a set message is written even empty,
		// and a negative int32 or int64 takes ten bytes.
		"zero and negative values": {
			Clusters:               []translate.Resource{{}, {Name: "only-a-name"}},
			ClusterLoadAssignments: []translate.Resource{{Version: "0123456789abcdef", Body: []byte{0}}},
			Statuses: []model.Status{{}, {
				Condition:    model.Condition{ObservedGeneration: -1},
				Availability: []model.TargetAvailability{{}, {Port: -2147483648}, {ReadyEndpoints: 1 << 31, Weight: 1<<32 - 1}},
			}},
		},
		// Lengths that take two and three bytes as varints.
		"long fields": {
			Clusters: []translate.Resource{{Name: string(bytes.Repeat([]byte("n"), 200)), Body: make([]byte, 20000)}},
			Statuses: []model.Status{{Condition: model.Condition{Message: string(bytes.Repeat([]byte("é"), 100))}}},
		},
	}
	for name, res := range cases {
		t.Run(name, func(t *testing.T) {
			checkWireTranslateResponse(t, res)
		})
	}
}

// TestWireTranslateResponseRefusesInvalidUTF8 holds the fast encoding to
// protobuf's refusal of a string that is not UTF-8, wherever it is.
func TestWireTranslateResponseRefusesInvalidUTF8(t *testing.T) {
	const bad = "a\xffb"
	for name, res := range map[string]*translate.Result{
		"resource name":   {Clusters: []translate.Resource{{Name: bad}}},
		"status message":  {Statuses: []model.Status{{Condition: model.Condition{Message: bad}}}},
		"warning reason":  {Statuses: []model.Status{{Condition: model.Condition{Warnings: []model.SubCondition{{Reason: bad}}}}}},
		"target's reason": {Statuses: []model.Status{{Availability: []model.TargetAvailability{{Reason: bad}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := proto.Marshal(encodeResult(res)); err == nil {
				t.Fatal("proto.Marshal took it; the case tests nothing")
			}
			if _, err := appendTranslateResponse(nil, res); err == nil {
				t.Error("appendTranslateResponse took a string that is not UTF-8")
			}
		})
	}
}

// FuzzWireTranslateResponse holds the fast encoding to protobuf on one
// resource and one status made of the fuzzer's values.
func FuzzWireTranslateResponse(f *testing.F) {
	st := everyStatusField()
	f.Add("extension/ns/name", "0123456789abcdef", []byte("body"), st.Name, st.Condition.Message, st.Condition.Warnings[0].Reason,
		st.Condition.ObservedGeneration, st.Availability[0].Port, st.Availability[0].ReadyEndpoints, uint8(3))
	f.Add("", "", []byte(nil), "", "", "", int64(0), int32(0), uint32(0), uint8(0))
	f.Add("a\xff", "", []byte{}, "é", "", "", int64(-1), int32(-1), uint32(1<<31), uint8(255))
	f.Fuzz(func(t *testing.T, name, version string, body []byte, statusName, message, reason string, generation int64, port int32, ready uint32, shape uint8) {
		res := &translate.Result{
			Clusters: []translate.Resource{{Name: name, Version: version, Body: body}},
			Statuses: []model.Status{{
				Namespace: "ns", Name: statusName, ClusterName: name, ResponseTimeout: version,
				Condition: model.Condition{Type: "Valid", Status: reason, ObservedGeneration: generation, Reason: reason, Message: message},
			}},
		}
		c := &res.Statuses[0].Condition
		for i := range int(shape & 3) {
			c.Errors = append(c.Errors, model.SubCondition{Type: statusName, Status: "True", Reason: reason, Message: message[:len(message)*i/3]})
		}
		for range int(shape >> 2 & 3) {
			c.Warnings = append(c.Warnings, model.SubCondition{Message: message})
		}
		for i := range int(shape >> 4 & 3) {
			res.Statuses[0].Availability = append(res.Statuses[0].Availability, model.TargetAvailability{
				Service: statusName, Port: port, ReadyEndpoints: ready >> i, Weight: uint32(generation), Reason: reason,
			})
		}
		if shape&64 != 0 {
			res.ClusterLoadAssignments, res.Clusters = res.Clusters, nil
		}
		checkWireTranslateResponse(t, res)
	})
}

// checkWireTranslateResponse checks res encodes, fast, to what protobuf
// makes of its messages, or fails as protobuf does.
func checkWireTranslateResponse(t *testing.T, res *translate.Result) {
	t.Helper()
	want, wantErr := proto.Marshal(encodeResult(res))
	got, err := appendTranslateResponse(nil, res)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendTranslateResponse: error %v; proto.Marshal's %v", err, wantErr)
	}
	if err != nil {
		return
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("appendTranslateResponse differs from proto.Marshal:\n got %x\nwant %x", got, want)
	}
	if size := sizeTranslateResponse(res); size != len(want) {
		t.Fatalf("sizeTranslateResponse = %d, want %d", size, len(want))
	}
	data, err := (&wireTranslateResponse{result: res}).marshal()
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	defer data.Free()
	if !bytes.Equal(data.Materialize(), want) {
		t.Fatal("marshal differs from appendTranslateResponse")
	}
}

// everyStatusField is a status with every field set, errors, warnings and
// targets among them.
func everyStatusField() model.Status {
	return model.Status{
		Namespace: "team-a", Name: "ext-authz", ClusterName: "extension/team-a/ext-authz", ResponseTimeout: "10s",
		Condition: model.Condition{
			Type: "Valid", Status: "False", ObservedGeneration: 300, Reason: "ErrorPresent", Message: "At least one error present, see Errors for details",
			Errors: []model.SubCondition{
				{Type: "ServiceError", Status: "True", Reason: "UnresolvedReference", Message: `unresolved service "team-a/gone"`},
				{Type: "TLSError", Status: "True", Reason: "SecretNotValid", Message: "no CA"},
			},
			Warnings: []model.SubCondition{{Type: "EndpointError", Status: "True", Reason: "InvalidAddress", Message: "1 endpoint"}},
		},
		Availability: []model.TargetAvailability{
			{Service: "authz", Port: 9000, ReadyEndpoints: 3, Weight: 80},
			{Service: "authz-canary", Port: 9000, Weight: 0, Reason: model.AvailabilityZeroWeight},
		},
	}
}
