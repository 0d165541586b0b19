package translate

import (
	"slices"
	"strings"
	"testing"

	"github.com/tributary-dev/tributary/internal/model"
)

// TestAnnotationGroups holds the Estimator's reading of annotations to
// model's keys: every key belongs to exactly one group by its prefix, and
// the keys whose values it measures exist.
func TestAnnotationGroups(t *testing.T) {
	keys := model.AnnotationKeys()
	for _, key := range keys {
		var groups []optionGroups
		for _, g := range annotationGroups {
			if strings.HasPrefix(key, g.prefix) {
				groups = append(groups, g.group)
			}
		}
		if len(groups) != 1 {
			t.Errorf("annotation %s is in %d groups, want 1", key, len(groups))
		}
	}
	for _, key := range []string{
		annotationServiceName, annotationAuthority, annotationHealthCheckPort,
		annotationSNI, annotationClientCertificate, annotationCipherSuites,
	} {
		if !slices.Contains(keys, key) {
			t.Errorf("the Estimator measures annotation %s, which model does not read", key)
		}
	}
}
