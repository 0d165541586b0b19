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
// or jq print them), unless its first value is not JSON but is YAML written
// in flow style ("{apiVersion: v1, ...}"); anything else is YAML, documents
// separated by "---". A document that fails to parse ends the split. When
// neither reading works, the error is the JSON one if the file looks like
// JSON (its first key is quoted), since a JSON file with a typo is far more
// likely than broken flow-style YAML.
func splitDocuments(data []byte) []document {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return splitYAML(data)
	}
	jsonDocs := splitJSON(data)
	if len(jsonDocs) > 1 || jsonDocs[0].err == nil {
		return jsonDocs
	}
	yamlDocs := splitYAML(data)
	if (len(yamlDocs) > 0 && yamlDocs[len(yamlDocs)-1].err != nil) && looksLikeJSON(trimmed) {
		return jsonDocs
	}
	return yamlDocs
}

// looksLikeJSON reports whether data, which starts with '{' or '[', starts
// the way JSON does rather than flow-style YAML: with a quoted key, or an
// array of objects or arrays.
func looksLikeJSON(data []byte) bool {
	rest := bytes.TrimLeft(data[1:], " \t\r\n")
	if len(rest) == 0 {
		return false
	}
	if data[0] == '{' {
		return rest[0] == '"'
	}
	return rest[0] == '{' || rest[0] == '['
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
			return append(docs, document{err: yamlSyntax(err, chunk)})
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

// lines counts the lines of the chunk's text, at least 1.
func (c yamlChunk) lines() int {
	n := bytes.Count(c.text, []byte("\n"))
	if len(c.text) > 0 && c.text[len(c.text)-1] != '\n' {
		n++
	}
	return max(n, 1)
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

// yamlParserProblems are the problems the YAML library's parser (as opposed
// to its scanner) reports. It numbers their lines from 0 where it numbers
// the scanner's from 1, and leaves the line out when it is 0, so a parser
// problem's line is one too early, or missing on the first line.
var yamlParserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found undefined tag handle":             true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

var yamlLine = regexp.MustCompile(`^line (\d+): `)

// yamlSyntax rewrites a YAML library error for a document: one line, each
// problem numbered with its line in the file. A problem found at the end of
// the document is put on its last line rather than on the line after it.
func yamlSyntax(err error, chunk yamlChunk) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:")
	msg = strings.TrimPrefix(msg, "yaml: ")
	// Decoding errors come one per line, each led by its own line number.
	var problems []string
	for p := range strings.Lines(msg) {
		p = strings.Join(strings.Fields(p), " ")
		if p == "" {
			continue
		}
		line := 0
		if m := yamlLine.FindStringSubmatch(p); m != nil {
			line, _ = strconv.Atoi(m[1])
			p = p[len(m[0]):]
		}
		if yamlParserProblems[p] {
			line++
		}
		if line > 0 {
			p = fmt.Sprintf("line %d: %s", chunk.firstLine+min(line, chunk.lines())-1, p)
		}
		problems = append(problems, p)
	}
	return errors.New("invalid YAML: " + strings.Join(problems, "; "))
}

// jsonSyntax gives the line and column (counted in bytes, from 1) of data a
// JSON syntax error is at.
func jsonSyntax(err error, data []byte) error {
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		// Offset counts the bytes read up to and including the bad one.
		before := data[:min(max(int(syntax.Offset)-1, 0), len(data))]
		line := 1 + bytes.Count(before, []byte("\n"))
		column := len(before) - bytes.LastIndexByte(before, '\n')
		return fmt.Errorf("invalid JSON: line %d, column %d: %s", line, column, syntax.Error())
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
		return yamlSyntax(err, yamlChunk{text: data, firstLine: 1})
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
