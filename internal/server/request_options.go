package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// fieldReporter records a problem with a field, whose path it completes:
// the same option groups arrive in an object (spec.options) and in the
// settings (extensionDefaults), and their problems read as the other
// problems of where they arrived.
type fieldReporter interface {
	report(field, reason, text string)
}

// objectFields reports fields of the object ref locates.
type objectFields struct {
	ref objectRef
	p   *problems
}

func (o objectFields) report(field, reason, text string) { o.ref.report(o.p, field, reason, text) }

// settingFields reports settings, whose message starts with their path.
type settingFields struct{ p *problems }

func (s settingFields) report(field, reason, text string) { s.p.add(field, reason, field+" "+text) }

// checkIn reports field to r when s is too long, and says whether it is.
func (l lengthLimit) checkIn(r fieldReporter, field, s string) bool {
	if l.tooLong(s) {
		r.report(field, ReasonOutOfRange, fmt.Sprintf("is %d bytes long; %s", len(s), l.why))
		return false
	}
	return true
}

// checkOptional is checkIn for an optional field; unset is within bounds.
func (l lengthLimit) checkOptional(r fieldReporter, field string, s *string) {
	if s != nil {
		l.checkIn(r, field, *s)
	}
}

// knownAnnotations are the annotation keys translation reads.
var knownAnnotations = model.AnnotationKeys()

// decodeAnnotations keeps the annotations of an ExtensionService whose key
// starts with source.AnnotationPrefix, the only ones translation reads, and
// bounds them (see maxOptionAnnotations, annotationKeyLimit and
// annotationValueLimit). The others cost nothing beyond a look at their
// key: whatever they hold (kubectl's last-applied-configuration repeats the
// whole object) is dropped without a check. An unknown key of ours is not
// refused here: translation reports it in the ExtensionService's status,
// beside the options that do parse.
func decodeAnnotations(ref objectRef, p *problems, all map[string]string) map[string]string {
	ours := 0
	for k := range all {
		if strings.HasPrefix(k, source.AnnotationPrefix) {
			ours++
		}
	}
	if ours == 0 {
		return nil
	}
	if ours > maxOptionAnnotations {
		ref.report(p, "metadata.annotations", ReasonOutOfRange, fmt.Sprintf(
			"holds %d annotations starting with %s; at most %d: translation reads %d such keys, so the rest could only be mistakes",
			ours, source.Quote(source.AnnotationPrefix), maxOptionAnnotations, len(knownAnnotations)))
		return nil
	}
	kept := all // every annotation is ours: alias the map, as other maps are
	if ours < len(all) {
		kept = make(map[string]string, ours)
		for k, v := range all {
			if strings.HasPrefix(k, source.AnnotationPrefix) {
				kept[k] = v
			}
		}
	}
	for k, v := range kept {
		if annotationKeyLimit.tooLong(k) || annotationValueLimit.tooLong(v) {
			reportAnnotations(ref, p, kept)
			break
		}
	}
	return kept
}

// reportAnnotations reports every annotation of ours over a limit, in key
// order, so the error does not depend on the order a map is walked in.
func reportAnnotations(ref objectRef, p *problems, ours map[string]string) {
	r := objectFields{ref, p}
	for _, k := range slices.Sorted(maps.Keys(ours)) {
		field := "metadata.annotations[" + source.Quote(k) + "]"
		if annotationKeyLimit.tooLong(k) {
			r.report(field, ReasonOutOfRange, fmt.Sprintf("has a key %d bytes long; %s", len(k), annotationKeyLimit.why))
			continue
		}
		annotationValueLimit.checkIn(r, field, ours[k])
	}
}

// decodeOptions converts option groups, found at path at of the client's
// message, and bounds their strings: an ExtensionService's spec.options
// (r reports on the object) and Settings.extension_defaults (r reports on
// the settings) share it, so both take the same values. Ranges and formats
// are translation's to judge: in the ExtensionService's status, or through
// model.CheckExtensionDefaults for the settings. The result aliases pb's
// optional fields and lists.
func decodeOptions(pb *tributaryv1.ExtensionOptions, at string, r fieldReporter) *source.ExtensionOptions {
	if pb == nil {
		return nil
	}
	o := &source.ExtensionOptions{}
	if g := pb.GetHealthCheck(); g != nil {
		f := at + ".healthCheck."
		healthServiceNameLimit.checkOptional(r, f+"serviceName", g.ServiceName)
		authorityLimit.checkOptional(r, f+"authority", g.Authority)
		durationLimit.checkOptional(r, f+"interval", g.Interval)
		durationLimit.checkOptional(r, f+"timeout", g.Timeout)
		o.HealthCheck = &source.HealthCheck{
			ServiceName: g.ServiceName, Authority: g.Authority, Interval: g.Interval, Timeout: g.Timeout,
			UnhealthyThreshold: g.UnhealthyThreshold, HealthyThreshold: g.HealthyThreshold, Port: g.Port,
		}
	}
	if g := pb.GetOutlierDetection(); g != nil {
		f := at + ".outlierDetection."
		durationLimit.checkOptional(r, f+"interval", g.Interval)
		durationLimit.checkOptional(r, f+"baseEjectionTime", g.BaseEjectionTime)
		durationLimit.checkOptional(r, f+"maxEjectionTime", g.MaxEjectionTime)
		o.OutlierDetection = &source.OutlierDetection{
			ConsecutiveGatewayFailure:      g.ConsecutiveGatewayFailure,
			ConsecutiveLocalOriginFailure:  g.ConsecutiveLocalOriginFailure,
			FailurePercentageThreshold:     g.FailurePercentageThreshold,
			FailurePercentageMinimumHosts:  g.FailurePercentageMinimumHosts,
			FailurePercentageRequestVolume: g.FailurePercentageRequestVolume,
			Interval:                       g.Interval,
			BaseEjectionTime:               g.BaseEjectionTime,
			MaxEjectionTime:                g.MaxEjectionTime,
			MaxEjectionPercent:             g.MaxEjectionPercent,
		}
	}
	if g := pb.GetTls(); g != nil {
		f := at + ".tls."
		sniLimit.checkOptional(r, f+"sni", g.Sni)
		caSecretLimit.checkOptional(r, f+"clientCertificate", g.ClientCertificate)
		keywordLimit.checkOptional(r, f+"minimumProtocolVersion", g.MinimumProtocolVersion)
		keywordLimit.checkOptional(r, f+"maximumProtocolVersion", g.MaximumProtocolVersion)
		checkCipherSuites(r, f+"cipherSuites", g.GetCipherSuites())
		o.TLS = &source.ExtensionTLS{
			SNI: g.Sni, ClientCertificate: g.ClientCertificate,
			MinimumProtocolVersion: g.MinimumProtocolVersion, MaximumProtocolVersion: g.MaximumProtocolVersion,
			CipherSuites: g.GetCipherSuites(),
		}
	}
	if g := pb.GetHttp2Keepalive(); g != nil {
		f := at + ".http2Keepalive."
		durationLimit.checkOptional(r, f+"interval", g.Interval)
		durationLimit.checkOptional(r, f+"timeout", g.Timeout)
		o.HTTP2Keepalive = &source.HTTP2Keepalive{Interval: g.Interval, Timeout: g.Timeout}
	}
	if g := pb.GetTcpKeepalive(); g != nil {
		f := at + ".tcpKeepalive."
		durationLimit.checkOptional(r, f+"time", g.Time)
		durationLimit.checkOptional(r, f+"interval", g.Interval)
		o.TCPKeepalive = &source.TCPKeepalive{Probes: g.Probes, Time: g.Time, Interval: g.Interval}
	}
	if g := pb.GetConnectionLimits(); g != nil {
		durationLimit.checkOptional(r, at+".connectionLimits.maxConnectionDuration", g.MaxConnectionDuration)
		o.ConnectionLimits = &source.ConnectionLimits{
			MaxConnectionDuration: g.MaxConnectionDuration, MaxRequestsPerConnection: g.MaxRequestsPerConnection,
		}
	}
	if g := pb.GetSlowStart(); g != nil {
		durationLimit.checkOptional(r, at+".slowStart.window", g.Window)
		o.SlowStart = &source.SlowStart{Window: g.Window, Aggression: g.Aggression, MinWeightPercent: g.MinWeightPercent}
	}
	if g := pb.GetClientSideWeightedRoundRobin(); g != nil {
		f := at + ".clientSideWeightedRoundRobin."
		durationLimit.checkOptional(r, f+"oobReportingPeriod", g.OobReportingPeriod)
		durationLimit.checkOptional(r, f+"blackoutPeriod", g.BlackoutPeriod)
		durationLimit.checkOptional(r, f+"weightExpirationPeriod", g.WeightExpirationPeriod)
		durationLimit.checkOptional(r, f+"weightUpdatePeriod", g.WeightUpdatePeriod)
		o.ClientSideWeightedRoundRobin = &source.ClientSideWeightedRoundRobin{
			EnableOOBLoadReport:     g.EnableOobLoadReport,
			OOBReportingPeriod:      g.OobReportingPeriod,
			BlackoutPeriod:          g.BlackoutPeriod,
			WeightExpirationPeriod:  g.WeightExpirationPeriod,
			WeightUpdatePeriod:      g.WeightUpdatePeriod,
			ErrorUtilizationPenalty: g.ErrorUtilizationPenalty,
		}
	}
	return o
}
