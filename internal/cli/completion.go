package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/runner"
)

// completeFlagValues lets a shell complete the values of the flags that
// take a word from a fixed list, and offer files of the right kind to the
// file flags (`softalloc completion bash|zsh|fish|powershell` writes the
// script).
func completeFlagValues(root *cobra.Command) {
	words := map[string][]string{
		"output":     {"table", "json", "csv", "observation"},
		"runner":     runner.Names(),
		"mode":       {"efficient", "paper"},
		"minjobs-at": {"saturation", "knee"},
		"progress":   {"auto", "plain", "none"},
		"policy":     {"ps", "rr", "priority", "weighted"},
		"pools":      {"shared", "per-class"},
		"format":     append(slices.Clone(report.SnippetFormats), "all"),
	}
	files := map[string][]string{
		"deployment":   {"yaml", "yml", "json"},
		"measurements": {"yaml", "yml", "json"},
		"model":        {"yaml", "yml"},
		"workload":     {"yaml", "yml"},
		"campaign":     {"jsonl", "json"},
		"journal":      {"jsonl"},
		"from-journal": {"jsonl"},
		"baseline":     {"json"},
		"metrics-file": {"prom"},
		"junit":        {"xml"},
		"plot":         {"svg", "png", "pdf"},
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		fs := c.Flags()
		for name, list := range words {
			if f := fs.Lookup(name); f != nil {
				if name == "output" && !strings.Contains(f.Usage, "observation") {
					list = list[:3]
				}
				_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(list, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		for name, exts := range files {
			if fs.Lookup(name) != nil {
				_ = c.MarkFlagFilename(name, exts...)
			}
		}
		if fs.Lookup("out") != nil {
			_ = c.MarkFlagDirname("out")
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// WriteManPages writes a man page per command into dir (`make man`).
func WriteManPages(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root := newRootCmd(newFactory(StandardStreams()))
	root.DisableAutoGenTag = true
	header := &doc.GenManHeader{Title: "SOFTALLOC", Section: "1", Source: "softalloc", Manual: "softalloc manual"}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("man pages in %s: %w", dir, err)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	if len(pages) == 0 {
		return fmt.Errorf("man pages in %s: none written", dir)
	}
	return nil
}
