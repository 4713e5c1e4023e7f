package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Read reads a report.json strictly, for commands that work from an earlier
// run (report diff, submission build --from):
//
//   - the schemaVersion is read first and on its own, so that a report of a
//     newer schema is refused for its version rather than for its first new
//     field;
//   - a field this binary does not know is refused: the file is not what it
//     claims, or is newer than the binary, and a reader that silently dropped
//     it would work on less than the file says;
//   - the digest must match the content: a report edited after aiconform
//     sealed it is not the run it claims to be.
func Read(r io.Reader) (*Report, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var head struct {
		SchemaVersion *string `json:"schemaVersion"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not a report.json: %s", jsonError(data, err))
	}
	switch {
	case head.SchemaVersion == nil:
		return nil, errors.New("no schemaVersion: not a report.json written by aiconform")
	case *head.SchemaVersion != SchemaVersion:
		return nil, fmt.Errorf("schemaVersion %q is not one this aiconform reads (it reads %q)", *head.SchemaVersion, SchemaVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var rep Report
	// json.Unmarshal above has already refused trailing data.
	if err := dec.Decode(&rep); err != nil {
		return nil, errors.New(jsonError(data, err))
	}
	if rep.Digest == "" {
		return nil, errors.New("no digest: the report was never sealed, so nothing shows it is the run it claims to be")
	}
	want, err := rawDigest(data)
	if err != nil {
		return nil, err
	}
	if rep.Digest != want {
		return nil, fmt.Errorf("digest %s does not match the content (%s): the file was changed after aiconform wrote it", rep.Digest, want)
	}
	return &rep, nil
}

// ReadFile is Read of a file; every error names the file.
func ReadFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	defer f.Close()
	rep, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

// rawDigest is the digest of a report.json as Seal computes it, from the
// file's own bytes: compacted (which undoes the renderer's indentation and
// nothing else) and with the top-level digest emptied. Working on the bytes
// rather than on a re-encoded Report keeps the check exact whatever fields
// this binary knows: a field added to the model after the report was
// written must not make an honest old report look tampered with.
func rawDigest(data []byte) (string, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return "", errors.New(jsonError(data, err))
	}
	b := compact.Bytes()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", errors.New("not a JSON object")
	}
	var emptied []byte
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", err
		}
		afterKey := dec.InputOffset()
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return "", err
		}
		if key != "digest" {
			continue
		}
		if emptied != nil {
			return "", errors.New("digest is given twice")
		}
		emptied = append(append(append([]byte{}, b[:afterKey]...), `:""`...), b[dec.InputOffset():]...)
	}
	if emptied == nil {
		return "", errors.New("no digest")
	}
	sum := sha256.Sum256(emptied)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// jsonError adds the line of a syntax error, which encoding/json gives only
// as a byte offset.
func jsonError(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset <= int64(len(data)) {
		line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
		return fmt.Sprintf("line %d: %v", line, err)
	}
	return err.Error()
}
