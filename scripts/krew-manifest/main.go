// Command krew-manifest fills the krew manifest template (.krew.yaml) as krew-release-bot
// does, from archives on disk instead of a published release, so that krew's own validator can
// check the result before anything is published.
//
// The template language is Go's text/template with the bot's two additions, reproduced from
// krew-release-bot v0.0.50 (pkg/source/template.go, RenderTemplate): `.TagName`, and
// `addURIAndSha URL TAG`, which renders URL as a template with `.TagName` and writes
// "uri: <url>\n    sha256: <sum of the asset>". Here the sum is the sha256 of the archive of
// the same file name in -archives; with -base-url the uri points there instead of at the
// release (a local server the validator installs from).
//
//	go run ./scripts/krew-manifest -template .krew.yaml -tag v0.1.0 -archives dist \
//	    [-base-url http://127.0.0.1:8000/] > aiml.yaml
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"
)

func main() {
	templateFile := flag.String("template", ".krew.yaml", "the manifest template")
	tag := flag.String("tag", "", "the release tag, e.g. v0.1.0")
	archives := flag.String("archives", "", "the folder holding the release archives")
	baseURL := flag.String("base-url", "", "serve-from URL replacing the release's download folder")
	flag.Parse()
	if *tag == "" || *archives == "" {
		fmt.Fprintln(os.Stderr, "krew-manifest: -tag and -archives are required")
		os.Exit(2)
	}
	out, err := render(*templateFile, *tag, *archives, *baseURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "krew-manifest: %v\n", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

func render(templateFile, tag, archives, baseURL string) ([]byte, error) {
	var failure error
	funcs := template.FuncMap{
		"addURIAndSha": func(url, tag string) string {
			var rendered bytes.Buffer
			inner, err := template.New("url").Parse(url)
			if err == nil {
				err = inner.Execute(&rendered, struct{ TagName string }{tag})
			}
			if err != nil {
				failure = fmt.Errorf("uri %q: %w", url, err)
				return ""
			}
			uri := rendered.String()
			name := path.Base(uri)
			sum, err := sha256File(filepath.Join(archives, name))
			if err != nil {
				failure = err
				return ""
			}
			if baseURL != "" {
				uri = strings.TrimSuffix(baseURL, "/") + "/" + name
			}
			return fmt.Sprintf("uri: %s\n    sha256: %s", uri, sum)
		},
	}
	t, err := template.New(filepath.Base(templateFile)).Funcs(funcs).ParseFiles(templateFile)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := t.Execute(&out, struct{ TagName string }{tag}); err != nil {
		return nil, err
	}
	if failure != nil {
		return nil, failure
	}
	return out.Bytes(), nil
}

func sha256File(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("archive %s: %w (build it with scripts/package-release)", file, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("archive %s: %w", file, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
