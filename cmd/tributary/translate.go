package main

import (
	"context"
	"errors"
	"fmt"
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
	paths         []string
	settingsPath  string
	format        string
	outputType    string
	recursive     bool
	failOnInvalid bool
}

func newTranslateCommand(std stdio) *cobra.Command {
	f := &translateFlags{}
	cmd := &cobra.Command{
		Use:   "translate -f PATH [-f PATH...]",
		Short: "Translate manifests once and print the result",
		Long: `Translate Kubernetes manifests (ExtensionServices, Services, EndpointSlices,
Secrets, TLSCertificateDelegations) once, in process, through the same code
tributary serve runs, and print the result in the shapes Envoy and
Kubernetes print theirs:

  - the Clusters and ClusterLoadAssignments as an Envoy admin ConfigDump, as
    Envoy's /config_dump serves it: a ClustersConfigDump and an
    EndpointsConfigDump, each resource with its version and its @type;
  - each ExtensionService's status, as Contour writes it, in a Kubernetes
    List of ExtensionServices, as kubectl get -o yaml prints them, without
    lastTransitionTime (only a change in a cluster has a time).

--type selects what is printed: all (the default) prints one object with
the ConfigDump under configDump and the List under statuses; cluster or
endpoint prints a ConfigDump holding only that section; status prints the
List alone. availability prints, per ExtensionService, each target
Service's ready endpoints and the weight its locality carries, with the
reason (NoReadyEndpoints, ZeroWeight) when it carries no traffic: a field
of Tributary's status that Contour's has not, so it is in no other output.
-o yaml prints the same document as YAML.

A directory is read as kubectl reads one: the .json, .yaml and .yml files
directly in it, and those of its subdirectories only with -R. Objects of
other kinds are skipped with a note on standard error; an object defined
twice is an error.

The command exits 0 when the input could be read, even if some
ExtensionServices are invalid (their statuses say why), and 1 when it could
not be read or translated. With --fail-on-invalid it still prints the
output, then exits 1 if any ExtensionService is invalid, with one line per
invalid ExtensionService on standard error.`,
		Example: `  # The repository's examples, as YAML
  tributary translate -f examples/ -o yaml

  # Only the Clusters, as in Envoy's /config_dump
  tributary translate -f examples/extauth.yaml --type cluster

  # The statuses Contour would write
  tributary translate -f manifests/ -R --type status -o yaml

  # Which Services of each ExtensionService carry no traffic, and why
  tributary translate -f manifests/ -R --type availability -o yaml

  # Gate a CI pipeline: exit 1 and name every invalid ExtensionService
  tributary translate -f manifests/ --fail-on-invalid > /dev/null

  # From standard input, with translator settings
  kubectl get extensionservices,services,endpointslices -A -o yaml | tributary translate -f - --settings settings.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTranslate(cmd.Context(), f, std) },
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&f.paths, "filename", "f", nil,
		"manifest `PATH`: a YAML or JSON file, a directory (the .json, .yaml and .yml files directly in it) or - for stdin; repeatable")
	// Shells offer directories and the files -f reads in them.
	if err := cmd.MarkFlagFilename("filename", "json", "yaml", "yml"); err != nil {
		panic(err)
	}
	fs.BoolVarP(&f.recursive, "recursive", "R", false, "read the subdirectories of -f directories too, as kubectl -R does")
	fs.StringVar(&f.settingsPath, "settings", "", "YAML `FILE` of translator settings (xdsClusterName, connectTimeout, globalCircuitBreakers, clientCertificate, upstreamTLS, extensionDefaults, enableExternalNameTargets)")
	fs.StringVarP(&f.format, "output", "o", "json", "output `format`: json or yaml")
	fs.StringVar(&f.outputType, "type", string(outputAll), "`TYPE` of output: "+outputTypeChoices+" (or their plurals)")
	fs.BoolVar(&f.failOnInvalid, "fail-on-invalid", false, "after printing, exit 1 if any ExtensionService is invalid, naming each on stderr")
	completeWords(cmd, "output", "json", "yaml")
	completeWords(cmd, "type", string(outputAll), string(outputCluster), string(outputEndpoint), string(outputStatus), string(outputAvailability))
	return cmd
}

// runTranslate translates manifests once, in process, through the same
// service code `tributary serve` runs, and prints what --type selects. It
// succeeds whenever the input could be read and translated, even if some
// ExtensionServices are invalid (their statuses say why) unless
// --fail-on-invalid, and fails when the input cannot be read or the service
// rejects it.
func runTranslate(ctx context.Context, f *translateFlags, std stdio) error {
	if len(f.paths) == 0 {
		return usageErrorf("at least one -f PATH is required")
	}
	if f.format != "json" && f.format != "yaml" {
		return usageErrorf("invalid --output %q: want json or yaml", f.format)
	}
	what, err := parseOutputType(f.outputType)
	if err != nil {
		return err
	}

	var settings *settingsFile
	if f.settingsPath != "" {
		if settings, err = readSettings(f.settingsPath); err != nil {
			return err
		}
	}
	manifests, err := manifest.Read(f.paths, std.in, manifest.Options{Recursive: f.recursive})
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

	req := &tributaryv1.TranslateRequest{Settings: requestSettings(settings)}
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
		return errors.New(describeServiceError(err, positions, f.settingsPath))
	}
	out, err := render(resp, f.format, what)
	if err != nil {
		return err
	}
	if _, err := std.out.Write(out); err != nil {
		return err
	}
	if f.failOnInvalid {
		return reportInvalid(resp, std)
	}
	return nil
}

// reportInvalid prints one error line per invalid ExtensionService, in the
// response's order, and ends the command with exitFailure if there was any.
// Each line stands alone, so a CI log shows every object to fix at once.
func reportInvalid(resp *tributaryv1.TranslateResponse, std stdio) error {
	invalid := false
	for _, s := range resp.GetStatuses() {
		if reason := invalidReason(s); reason != "" {
			invalid = true
			std.errorf("%s%s %s is invalid: %s\n", errorPrefix, extensionServiceKind, strconv.Quote(s.GetNamespace()+"/"+s.GetName()), reason)
		}
	}
	if invalid {
		return exitError{exitFailure}
	}
	return nil
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

// objectField matches a violation's field about one object of the request
// ("objects[3].service.metadata.name"), objectMention any mention of one in
// a message ("duplicates objects[0]").
var (
	objectField   = regexp.MustCompile(`^objects\[(\d+)\]`)
	objectMention = regexp.MustCompile(`\bobjects\[(\d+)\]`)
)

// describeServiceError explains a failed Translate call. For
// InvalidArgument it prints every field violation, each led by where the
// object came from ("input.yaml: document 3") or by the settings file, so
// the user can go straight to the line to fix. The request's indexes mean
// nothing to someone who wrote manifests, so every objects[N] in the
// service's message and descriptions becomes the position of object N.
func describeServiceError(err error, positions []manifest.Position, settingsPath string) string {
	st, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	if st.Code() != codes.InvalidArgument {
		return fmt.Sprintf("translation failed (%s): %s", st.Code(), withPositions(st.Message(), positions))
	}
	var violations []*errdetails.BadRequest_FieldViolation
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			violations = append(violations, br.GetFieldViolations()...)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid input: %s", withPositions(st.Message(), positions))
	for _, v := range violations {
		b.WriteString("\n  ")
		desc := v.GetDescription()
		// A description that opens with its own object ("objects[1]
		// (Service): metadata.namespace is required") gets the position in
		// that place rather than twice.
		if m := objectField.FindString(v.GetField()); m == "" || !strings.HasPrefix(desc, m) {
			b.WriteString(violationSource(v.GetField(), positions, settingsPath))
		}
		b.WriteString(withPositions(desc, positions))
	}
	return b.String()
}

// withPositions replaces each objects[N] in text by the position object N
// was read from.
func withPositions(text string, positions []manifest.Position) string {
	return objectMention.ReplaceAllStringFunc(text, func(mention string) string {
		if p, ok := objectPosition(objectMention.FindStringSubmatch(mention)[1], positions); ok {
			return p.String()
		}
		return mention
	})
}

// objectPosition is the position of the object whose request index is
// index, a decimal string.
func objectPosition(index string, positions []manifest.Position) (manifest.Position, bool) {
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= len(positions) {
		return manifest.Position{}, false
	}
	return positions[i], true
}

// violationSource gives "path: document N: " for a field of an object,
// "settings.yaml: " for a setting, or "".
func violationSource(field string, positions []manifest.Position, settingsPath string) string {
	if m := objectField.FindStringSubmatch(field); m != nil {
		if p, ok := objectPosition(m[1], positions); ok {
			return p.String() + ": "
		}
		return ""
	}
	if settingsPath != "" && (field == "settings" || strings.HasPrefix(field, "settings.")) {
		return settingsPath + ": "
	}
	return ""
}
