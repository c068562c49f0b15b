// Command crdprep turns the agent-sandbox controller's own CRD manifests (YAML, from its module
// source) into JSON ready to create: only the v1beta1 version is kept (served and stored) and the
// conversion webhook is replaced by strategy None, because the test cluster runs the controller
// with --enable-webhook=false. Usage: crdprep <crd-yaml-dir> <out-dir>
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

const keepVersion = "v1beta1"

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: crdprep <crd-yaml-dir> <out-dir>")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "crdprep:", err)
		os.Exit(1)
	}
}

func run(inDir, outDir string) error {
	entries, err := os.ReadDir(inDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	var names []string
	for _, entry := range entries {
		if !entry.IsDir() && (strings.HasSuffix(entry.Name(), ".yaml") || strings.HasSuffix(entry.Name(), ".yml")) {
			names = append(names, entry.Name())
		}
	}
	sort.Strings(names)
	written := 0
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join(inDir, name))
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if doc["kind"] != "CustomResourceDefinition" {
			continue
		}
		if err := onlyV1beta1(doc); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		target := filepath.Join(outDir, strings.TrimSuffix(strings.TrimSuffix(name, ".yaml"), ".yml")+".json")
		if err := os.WriteFile(target, out, 0o644); err != nil {
			return err
		}
		written++
	}
	if written == 0 {
		return fmt.Errorf("no CustomResourceDefinition in %s", inDir)
	}
	fmt.Printf("crdprep: wrote %d CRDs to %s\n", written, outDir)
	return nil
}

func onlyV1beta1(doc map[string]any) error {
	spec, ok := doc["spec"].(map[string]any)
	if !ok {
		return fmt.Errorf("no spec")
	}
	versions, ok := spec["versions"].([]any)
	if !ok {
		return fmt.Errorf("no spec.versions")
	}
	var kept []any
	for _, v := range versions {
		version, ok := v.(map[string]any)
		if ok && version["name"] == keepVersion {
			version["served"] = true
			version["storage"] = true
			delete(version, "deprecated")
			delete(version, "deprecationWarning")
			kept = append(kept, version)
		}
	}
	if len(kept) != 1 {
		return fmt.Errorf("expected exactly one %s version, found %d", keepVersion, len(kept))
	}
	spec["versions"] = kept
	spec["conversion"] = map[string]any{"strategy": "None"}
	if meta, ok := doc["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	delete(doc, "status")
	return nil
}
