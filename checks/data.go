package checks

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Data decodes a data file a check package embeds (device plugins, DRA
// drivers, sandboxes...) strictly: a key the type does not know is an
// error naming the file, so that a typo in the data cannot pass unseen.
func Data[T any](name string, data []byte) (T, error) {
	var v T
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}
