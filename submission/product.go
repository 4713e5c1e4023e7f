package submission

import (
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// ProductName is the file a submission directory is judged by.
const ProductName = "PRODUCT.yaml"

// Product is a parsed PRODUCT.yaml, or a template: the same format with the
// status, evidence and notes left empty. Order and line numbers are kept so
// that problems can point into the file.
type Product struct {
	// Metadata maps each key of metadata to its scalar value.
	Metadata     map[string]string
	MetadataLine map[string]int
	Categories   []Category
}

// Category is one key of spec and its requirements, in file order.
type Category struct {
	Name  string
	Line  int
	Items []Item
}

// Item is one requirement entry of a PRODUCT.yaml.
type Item struct {
	ID          string   `yaml:"id"`
	Description string   `yaml:"description"`
	Level       string   `yaml:"level"`
	Status      string   `yaml:"status"`
	Evidence    []string `yaml:"evidence"`
	Notes       string   `yaml:"notes"`
	// Line is where the entry starts, for messages.
	Line int `yaml:"-"`
}

// ReadProduct parses a PRODUCT.yaml or a template file.
func ReadProduct(path string) (*Product, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := ParseProduct(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ParseProduct parses the bytes of a PRODUCT.yaml. It walks the node tree
// rather than decoding into a struct so that a metadata value written as a
// YAML number (platformVersion: 1.35) still reads as the text it is.
func ParseProduct(data []byte) (*Product, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a YAML mapping with metadata and spec")
	}
	p := &Product{Metadata: map[string]string{}, MetadataLine: map[string]int{}}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		switch key.Value {
		case "metadata":
			if val.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("line %d: metadata is not a mapping", val.Line)
			}
			for j := 0; j+1 < len(val.Content); j += 2 {
				k, v := val.Content[j], val.Content[j+1]
				if v.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("line %d: metadata.%s is not a single value", v.Line, k.Value)
				}
				p.Metadata[k.Value] = v.Value
				p.MetadataLine[k.Value] = k.Line
			}
		case "spec":
			if val.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("line %d: spec is not a mapping", val.Line)
			}
			for j := 0; j+1 < len(val.Content); j += 2 {
				k, v := val.Content[j], val.Content[j+1]
				c := Category{Name: k.Value, Line: k.Line}
				if v.Kind != yaml.SequenceNode {
					return nil, fmt.Errorf("line %d: spec.%s is not a list", v.Line, k.Value)
				}
				for _, n := range v.Content {
					var it Item
					if err := n.Decode(&it); err != nil {
						return nil, fmt.Errorf("line %d: spec.%s: %w", n.Line, k.Value, err)
					}
					it.Line = n.Line
					c.Items = append(c.Items, it)
				}
				p.Categories = append(p.Categories, c)
			}
		}
	}
	return p, nil
}
