package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// document is one document of a file, as JSON, or the error that kept it
// from being read.
type document struct {
	json []byte
	err  error
}

// empty reports whether the document holds nothing (only comments, or an
// explicit null): such documents are not counted.
func (d document) empty() bool {
	if d.err != nil {
		return false
	}
	j := bytes.TrimSpace(d.json)
	return len(j) == 0 || string(j) == "null"
}

// splitDocuments cuts a file into documents. A file whose first character is
// '{' or '[' is a JSON stream (one or more values, as `kubectl get -o json`
// or jq print them), unless its first value is not JSON at all, in which case
// it is YAML written in flow style; anything else is YAML, documents
// separated by "---". A document that fails to parse ends the split.
func splitDocuments(data []byte) []document {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		if docs := splitJSON(data); len(docs) > 1 || docs[0].err == nil {
			return docs
		}
	}
	return splitYAML(data)
}

// splitJSON returns at least one document for non-blank data.
func splitJSON(data []byte) []document {
	var docs []document
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return docs
		}
		if err != nil {
			return append(docs, document{err: jsonSyntax(err, data)})
		}
		docs = append(docs, document{json: raw})
	}
}

func splitYAML(data []byte) []document {
	var docs []document
	for _, chunk := range yamlChunks(data) {
		// Strict conversion rejects a key given twice in one mapping, which
		// plain YAML parsers resolve by keeping one of them silently.
		j, err := yaml.YAMLToJSONStrict(chunk.text)
		if err != nil {
			return append(docs, document{err: yamlSyntax(err, chunk.firstLine)})
		}
		docs = append(docs, document{json: j})
	}
	return docs
}

// yamlChunk is the text of one YAML document and the line of the file it
// starts on, so that errors can give file lines rather than document lines.
type yamlChunk struct {
	text      []byte
	firstLine int
}

// yamlChunks splits YAML at document separators: lines that are "---",
// optionally followed by blanks or a comment.
func yamlChunks(data []byte) []yamlChunk {
	var chunks []yamlChunk
	cur := yamlChunk{firstLine: 1}
	line := 0
	for len(data) > 0 {
		line++
		next := len(data)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			next = i + 1
		}
		text := data[:next]
		data = data[next:]
		if isSeparator(text) {
			chunks = append(chunks, cur)
			cur = yamlChunk{firstLine: line + 1}
			continue
		}
		cur.text = append(cur.text, text...)
	}
	return append(chunks, cur)
}

func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimLeft(rest, " \t")
	return len(rest) == 0 || rest[0] == '#'
}

var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)

// yamlSyntax rewrites a YAML parser error for a document starting at
// firstLine: one line, numbered from the start of the file.
func yamlSyntax(err error, firstLine int) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.Join(strings.Fields(msg), " ")
	msg = yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
		return "line " + strconv.Itoa(n+firstLine-1)
	})
	return errors.New("invalid YAML: " + msg)
}

// jsonSyntax gives the line of data a JSON syntax error is on.
func jsonSyntax(err error, data []byte) error {
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		line := 1 + bytes.Count(data[:min(int(syntax.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("invalid JSON: line %d: %s", line, syntax.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("invalid JSON: unexpected end of input")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// UnmarshalStrict decodes one YAML (or JSON) document into v with the same
// strictness as manifests: field names match case-sensitively, and unknown
// or repeated fields are errors naming their path. An empty document leaves
// v untouched. It suits small configuration files, such as translation
// settings, that should fail as loudly as manifests do.
func UnmarshalStrict(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return yamlSyntax(err, 1)
	}
	if d := (document{json: j}); d.empty() {
		return nil
	}
	return unmarshalStrict(j, v)
}

// unmarshalLoose decodes with Kubernetes' case-sensitive rules, ignoring
// unknown fields.
func unmarshalLoose(data []byte, v any) error {
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, v); err != nil {
		return cleanJSONError(err)
	}
	return nil
}

// unmarshalStrict decodes the way the API server's strict field validation
// does: field names match case-sensitively, and an unknown or repeated field
// is an error that names its full path ("spec.ports[0].portName").
func unmarshalStrict(data []byte, v any) error {
	strictErrs, err := kjson.UnmarshalStrict(data, v)
	if err != nil {
		return cleanJSONError(err)
	}
	if len(strictErrs) == 0 {
		return nil
	}
	msgs := make([]string, len(strictErrs))
	for i, e := range strictErrs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// cleanJSONError drops the "json: " prefix, which says nothing to someone
// who wrote YAML.
func cleanJSONError(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}
