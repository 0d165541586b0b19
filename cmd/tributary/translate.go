package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	discovery_v1 "k8s.io/api/discovery/v1"

	"github.com/tributary-dev/tributary/client/contour"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/manifest"
	"github.com/tributary-dev/tributary/internal/server"
)

const translateSynopsis = "tributary translate -f PATH [-f PATH...] [--settings FILE] [-o json|yaml]"

// runTranslate translates manifests once, in process, through the same
// service code `tributary serve` runs, and prints one object: the Clusters,
// the ClusterLoadAssignments and a status per ExtensionService. It exits 0
// whenever the input could be read and translated, even if some
// ExtensionServices are invalid (their statuses say why), and 1 when the
// input cannot be read or the service rejects it.
func runTranslate(ctx context.Context, args []string, std stdio) int {
	fs := newFlagSet("translate", translateSynopsis, std.err)
	var paths stringList
	fs.Var(&paths, "f", "manifest `PATH`: a YAML or JSON file, a directory (its *.yaml, *.yml and *.json files, recursively) or - for stdin; repeatable")
	settingsPath := fs.String("settings", "", "YAML `FILE` of translator settings (xdsClusterName, connectTimeout, globalCircuitBreakers, clientCertificate, upstreamTLS)")
	format := fs.String("o", "json", "output `format`: json or yaml")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if len(paths) == 0 {
		std.errorf("tributary translate: at least one -f PATH is required\n")
		fs.Usage()
		return 2
	}
	if *format != "json" && *format != "yaml" {
		std.errorf("tributary translate: invalid -o %q: want json or yaml\n", *format)
		return 2
	}

	fail := func(err error) int {
		std.errorf("tributary translate: %v\n", err)
		return 1
	}
	var settings *contour.Config
	if *settingsPath != "" {
		var err error
		if settings, err = readSettings(*settingsPath); err != nil {
			return fail(err)
		}
	}
	manifests, err := manifest.Read(paths, std.in)
	if err != nil {
		return fail(err)
	}
	notes := notes{std: std}
	for _, s := range manifests.Skipped {
		notes.add("%s: skipped %s", s.Position, describeSkipped(s))
	}
	for _, o := range manifests.Objects {
		if slice, ok := o.Object.(*discovery_v1.EndpointSlice); ok && slice.Labels[discovery_v1.LabelServiceName] == "" {
			notes.add("%s: ignored EndpointSlice %s (its %s label is missing or empty: it belongs to no Service)",
				o.Position, strconv.Quote(slice.Namespace+"/"+slice.Name), discovery_v1.LabelServiceName)
		}
	}
	notes.flush()

	req := &tributaryv1.TranslateRequest{Settings: contour.Settings(settings)}
	positions := make([]manifest.Position, 0, len(manifests.Objects))
	for _, o := range manifests.Objects {
		obj, ok := contour.Object(o.Object)
		if !ok {
			// Unreachable: package manifest returns only kinds contour converts.
			return fail(fmt.Errorf("%s: cannot convert %T", o.Position, o.Object))
		}
		req.Objects = append(req.Objects, obj)
		positions = append(positions, o.Position)
	}

	resp, err := server.NewTranslationService().Translate(ctx, req)
	if err != nil {
		std.errorf("%s", describeServiceError(err, positions, *settingsPath))
		return 1
	}
	out, err := render(resp, *format)
	if err != nil {
		return fail(err)
	}
	if _, err := std.out.Write(out); err != nil {
		return fail(err)
	}
	return 0
}

func readSettings(path string) (*contour.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c contour.Config
	if err := manifest.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// maxNotes bounds the notes one run prints: manifests of a whole cluster
// can hold thousands of objects translation does not read, and a note per
// object would bury the output.
const maxNotes = 20

// notes prints "tributary translate: note: ..." lines on stderr, one per
// object translation skips or ignores, up to maxNotes, then how many more
// there were.
type notes struct {
	std stdio
	n   int
}

func (n *notes) add(format string, args ...any) {
	n.n++
	if n.n <= maxNotes {
		n.std.errorf("tributary translate: note: "+format+"\n", args...)
	}
}

// flush says how many notes were left out.
func (n *notes) flush() {
	if more := n.n - maxNotes; more > 0 {
		n.std.errorf("tributary translate: note: %d more objects skipped or ignored\n", more)
	}
}

// describeSkipped gives `apps/v1 Deployment "ns/name" (not read by translation)`.
func describeSkipped(s manifest.Skipped) string {
	name := s.Name
	if s.Namespace != "" {
		name = s.Namespace + "/" + name
	}
	if name != "" {
		name = " " + strconv.Quote(name)
	}
	return fmt.Sprintf("%s %s%s (not read by translation)", s.APIVersion, s.Kind, name)
}

var objectIndex = regexp.MustCompile(`^objects\[(\d+)\]`)

// describeServiceError explains a failed Translate call. For
// InvalidArgument it prints every field violation, each led by where the
// object came from ("input.yaml: document 3") or by the settings file, so
// the user can go straight to the line to fix.
func describeServiceError(err error, positions []manifest.Position, settingsPath string) string {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Sprintf("tributary translate: %v\n", err)
	}
	if st.Code() != codes.InvalidArgument {
		return fmt.Sprintf("tributary translate: translation failed (%s): %s\n", st.Code(), st.Message())
	}
	var violations []*errdetails.BadRequest_FieldViolation
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			violations = append(violations, br.GetFieldViolations()...)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tributary translate: invalid input: %s\n", st.Message())
	for _, v := range violations {
		fmt.Fprintf(&b, "  %s%s\n", violationSource(v.GetField(), positions, settingsPath), v.GetDescription())
	}
	return b.String()
}

// violationSource gives "path: document N: " for a field of an object,
// "settings.yaml: " for a setting, or "".
func violationSource(field string, positions []manifest.Position, settingsPath string) string {
	if m := objectIndex.FindStringSubmatch(field); m != nil {
		if i, err := strconv.Atoi(m[1]); err == nil && i < len(positions) {
			return positions[i].String() + ": "
		}
		return ""
	}
	if settingsPath != "" && (field == "settings" || strings.HasPrefix(field, "settings.")) {
		return settingsPath + ": "
	}
	return ""
}
