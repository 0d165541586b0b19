package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	discovery_v1 "k8s.io/api/discovery/v1"

	"github.com/tributary-dev/tributary/client/contour"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/manifest"
	"github.com/tributary-dev/tributary/internal/server"
)

// translateFlags are the flags of `tributary translate`.
type translateFlags struct {
	paths        []string
	settingsPath string
	format       string
	recursive    bool
}

func newTranslateCommand(std stdio) *cobra.Command {
	f := &translateFlags{}
	cmd := &cobra.Command{
		Use:   "translate -f PATH [-f PATH...]",
		Short: "Translate manifests once and print the result",
		Long: `Translate Kubernetes manifests (ExtensionServices, Services, EndpointSlices,
Secrets, TLSCertificateDelegations) once, in process, through the same code
tributary serve runs, and print the Clusters, ClusterLoadAssignments and a
status per ExtensionService. Objects of other kinds are skipped with a note
on standard error.`,
		Example: `  # The repository's example
  tributary translate -f examples/extauth.yaml -o yaml

  # From standard input, with translator settings
  kubectl get extensionservices,services,endpointslices -A -o yaml | tributary translate -f - --settings settings.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTranslate(cmd.Context(), f, std) },
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&f.paths, "filename", "f", nil,
		"manifest `PATH`: a YAML or JSON file, a directory (its *.yaml, *.yml and *.json files) or - for stdin; repeatable")
	fs.BoolVarP(&f.recursive, "recursive", "R", false, "read the subdirectories of -f directories too, as kubectl -R does")
	fs.StringVar(&f.settingsPath, "settings", "", "YAML `FILE` of translator settings (xdsClusterName, connectTimeout, globalCircuitBreakers, clientCertificate, upstreamTLS)")
	fs.StringVarP(&f.format, "output", "o", "json", "output `format`: json or yaml")
	return cmd
}

// runTranslate translates manifests once, in process, through the same
// service code `tributary serve` runs, and prints one object: the Clusters,
// the ClusterLoadAssignments and a status per ExtensionService. It succeeds
// whenever the input could be read and translated, even if some
// ExtensionServices are invalid (their statuses say why), and fails when the
// input cannot be read or the service rejects it.
func runTranslate(ctx context.Context, f *translateFlags, std stdio) error {
	paths, settingsPath, format := f.paths, &f.settingsPath, &f.format
	if len(paths) == 0 {
		return usageErrorf("at least one -f PATH is required")
	}
	if *format != "json" && *format != "yaml" {
		return usageErrorf("invalid --output %q: want json or yaml", *format)
	}

	var settings *contour.Config
	if *settingsPath != "" {
		var err error
		if settings, err = readSettings(*settingsPath); err != nil {
			return err
		}
	}
	manifests, err := manifest.Read(paths, std.in, manifest.Options{Recursive: f.recursive})
	if err != nil {
		return err
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
			return fmt.Errorf("%s: cannot convert %T", o.Position, o.Object)
		}
		req.Objects = append(req.Objects, obj)
		positions = append(positions, o.Position)
	}

	resp, err := server.NewTranslationService().Translate(ctx, req)
	if err != nil {
		return errors.New(describeServiceError(err, positions, *settingsPath))
	}
	out, err := render(resp, *format)
	if err != nil {
		return err
	}
	_, err = std.out.Write(out)
	return err
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

// notes prints "note: ..." lines on stderr, one per
// object translation skips or ignores, up to maxNotes, then how many more
// there were.
type notes struct {
	std stdio
	n   int
}

func (n *notes) add(format string, args ...any) {
	n.n++
	if n.n <= maxNotes {
		n.std.errorf("note: "+format+"\n", args...)
	}
}

// flush says how many notes were left out.
func (n *notes) flush() {
	if more := n.n - maxNotes; more > 0 {
		n.std.errorf("note: %d more objects skipped or ignored\n", more)
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
		return err.Error()
	}
	if st.Code() != codes.InvalidArgument {
		return fmt.Sprintf("translation failed (%s): %s", st.Code(), st.Message())
	}
	var violations []*errdetails.BadRequest_FieldViolation
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			violations = append(violations, br.GetFieldViolations()...)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid input: %s", st.Message())
	for _, v := range violations {
		fmt.Fprintf(&b, "\n  %s%s", violationSource(v.GetField(), positions, settingsPath), v.GetDescription())
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
