package certs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// dataLink is the symbolic link [WriteDir] swaps, named as the kubelet
// names the one in a Secret volume.
const dataLink = "..data"

// WriteDir replaces the files of dir as one set, the way the kubelet
// updates a Secret volume: the files are written into a new hidden folder
// (dir/..<random>), the link dir/..data is pointed at it by one rename, and
// each name in files is a link through ..data. A reader opening
// dir/tls.crt and then dir/tls.key sees both from the old set or both from
// the new one, except across the one rename, so a certificate and its key
// never stay mismatched; framework.LoadCredentials, which keeps its last
// good pair while they disagree, reads the new set at its next reload.
//
// dir is created (mode 0700) if missing; a regular file already there
// under one of the names (an earlier [CA.WriteFiles], say) is replaced by
// its link. Folders of earlier sets are removed once the link has moved.
// Names must be plain file names, without '/' and not starting with "..".
// Files are written with mode 0600.
func WriteDir(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for name := range files {
		if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, "..") || name == "." {
			return fmt.Errorf("certs: %q is not a plain file name", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	set := ".." + hex.EncodeToString(suffix[:])
	if err := os.Mkdir(filepath.Join(dir, set), 0o700); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, set, name), files[name], 0o600); err != nil {
			return fmt.Errorf("certs: %w", err)
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	if err := replaceLink(dir, dataLink, set); err != nil {
		return err
	}
	for _, name := range names {
		if target, err := os.Readlink(filepath.Join(dir, name)); err == nil && target == filepath.Join(dataLink, name) {
			continue
		}
		if err := replaceLink(dir, name, filepath.Join(dataLink, name)); err != nil {
			return err
		}
	}
	if old != "" && old != set && strings.HasPrefix(old, "..") && !strings.ContainsAny(old, `/\`) {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return fmt.Errorf("certs: %w", err)
		}
	}
	return nil
}

// replaceLink points dir/name at target, replacing whatever is there by
// one rename.
func replaceLink(dir, name, target string) error {
	tmp := filepath.Join(dir, name+".tmp-link")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("certs: %w", err)
	}
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}
