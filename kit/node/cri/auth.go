package cri

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// dockerConfigEntry is one registry's entry of a .dockerconfigjson (under "auths") or .dockercfg secret.
type dockerConfigEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
}

// credential is one registry key of a pull secret with its auth.
type credential struct {
	key  string // as written in the secret: host[:port][/path], possibly with a scheme and globs
	auth *runtimeapi.AuthConfig
}

// Credentials returns, for image, the auths of the pull secrets whose registry key matches the image's registry
// the way the kubelet's keyring matches them (and OpenKruise's daemon, which uses it): the key's host matches
// the image's host part by part (each part may be a glob), the ports are equal, and the key's path is a prefix
// of the image's repository path; the most specific keys (sorted in reverse) come first. Secrets of another type,
// or whose content does not parse, give nothing. A nil result means an anonymous pull.
func Credentials(image string, secrets []corev1.Secret) []*runtimeapi.AuthConfig {
	target := normalizeImage(image)
	var creds []credential
	for i := range secrets {
		creds = append(creds, secretCredentials(&secrets[i])...)
	}
	sort.SliceStable(creds, func(i, j int) bool { return creds[i].key > creds[j].key })
	var out []*runtimeapi.AuthConfig
	for _, c := range creds {
		if keyMatches(c.key, target) {
			out = append(out, c.auth)
		}
	}
	return out
}

func secretCredentials(s *corev1.Secret) []credential {
	var entries map[string]dockerConfigEntry
	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		var cfg struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg) != nil {
			return nil
		}
		entries = cfg.Auths
	case corev1.SecretTypeDockercfg:
		if json.Unmarshal(s.Data[corev1.DockerConfigKey], &entries) != nil {
			return nil
		}
	default:
		return nil
	}
	out := make([]credential, 0, len(entries))
	for key, e := range entries {
		// No ServerAddress: containerd parses it as a URL and refuses host:port, and the kubelet leaves it empty too
		// (the runtime knows which registry it pulls from).
		a := &runtimeapi.AuthConfig{Username: e.Username, Password: e.Password, Auth: e.Auth, IdentityToken: e.IdentityToken}
		// The kubelet decodes auth into username and password; a runtime then needs no base64 of its own.
		if a.Username == "" && a.Password == "" && e.Auth != "" {
			if raw, err := base64.StdEncoding.DecodeString(e.Auth); err == nil {
				if user, pass, ok := strings.Cut(string(raw), ":"); ok {
					a.Username, a.Password = user, pass
				}
			}
		}
		k := key
		// Docker Hub's legacy key names the same registry as an image without one.
		if strings.Contains(k, "index.docker.io") {
			k = "docker.io"
		}
		out = append(out, credential{key: k, auth: a})
	}
	return out
}

// normalizeImage gives image's registry host (docker.io when it names none) and repository path, without tag or
// digest, as the kubelet looks it up: "busybox" is docker.io/library/busybox.
func normalizeImage(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i >= 0 && !strings.Contains(image[i:], "/") {
		image = image[:i]
	}
	first, rest, ok := strings.Cut(image, "/")
	if !ok || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if !strings.Contains(image, "/") {
			image = "library/" + image
		}
		return "docker.io/" + image
	}
	return first + "/" + rest
}

// keyMatches reports whether a secret's registry key matches the normalized image target.
func keyMatches(key, target string) bool {
	k, err := parseRef(key)
	if err != nil {
		return false
	}
	t, err := parseRef(target)
	if err != nil {
		return false
	}
	kHost, kPort := splitPort(k.Host)
	tHost, tPort := splitPort(t.Host)
	if kPort != tPort {
		return false
	}
	kParts, tParts := strings.Split(kHost, "."), strings.Split(tHost, ".")
	if len(kParts) != len(tParts) {
		return false
	}
	for i := range kParts {
		if ok, err := path.Match(kParts[i], tParts[i]); err != nil || !ok {
			return false
		}
	}
	return strings.HasPrefix(t.Path, k.Path)
}

func parseRef(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	return url.Parse(s)
}

func splitPort(host string) (string, string) {
	if h, p, ok := strings.Cut(host, ":"); ok {
		return h, p
	}
	return host, ""
}
