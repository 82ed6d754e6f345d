package kubernetes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/kbroker/kbroker/config"
)

// manifests are the files `kubectl apply -f` takes; each is a complete
// cluster on its own.
var manifests = []string{"kbroker.yaml", "kbroker-secure.yaml"}

// The bounds of a broker's shutdown (cluster/doc.go, "Shutdown order"):
// the controlled shutdown is bounded at 15 s and the drain of requests in
// flight at 10 s. Where the cluster package's source still spells them as
// the test expects, the values there are used instead.
const (
	controlledShutdownBound = 15 * time.Second
	drainBound              = 10 * time.Second
	// flushMargin is the time left for closing the logs after both.
	flushMargin = 5 * time.Second
)

const (
	rackEnv       = "KBROKER_BROKER_RACK"
	zoneFieldPath = "metadata.labels['topology.kubernetes.io/zone']"
	hostnameKey   = "kubernetes.io/hostname"
)

// objects is one manifest, decoded.
type objects struct {
	file         string
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	pdbs         []*policyv1.PodDisruptionBudget
	secrets      []*corev1.Secret
	configMaps   []*corev1.ConfigMap
	policies     []*networkingv1.NetworkPolicy
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decode splits a multi-document YAML stream and decodes each document
// strictly (unknown and duplicate fields fail) into its API type.
func decode(t *testing.T, name string, data []byte) objects {
	t.Helper()
	o := objects{file: name}
	for i, doc := range docSeparator.Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("%s document %d: %v", name, i+1, err)
		}
		var obj any
		switch head.APIVersion + "/" + head.Kind {
		case "apps/v1/StatefulSet":
			s := &appsv1.StatefulSet{}
			o.statefulSets, obj = append(o.statefulSets, s), s
		case "v1/Service":
			s := &corev1.Service{}
			o.services, obj = append(o.services, s), s
		case "policy/v1/PodDisruptionBudget":
			p := &policyv1.PodDisruptionBudget{}
			o.pdbs, obj = append(o.pdbs, p), p
		case "v1/Secret":
			s := &corev1.Secret{}
			o.secrets, obj = append(o.secrets, s), s
		case "v1/ConfigMap":
			c := &corev1.ConfigMap{}
			o.configMaps, obj = append(o.configMaps, c), c
		case "networking.k8s.io/v1/NetworkPolicy":
			p := &networkingv1.NetworkPolicy{}
			o.policies, obj = append(o.policies, p), p
		default:
			t.Fatalf("%s document %d: %s %s is not a kind this test knows; add it to decode", name, i+1, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s document %d (%s): %v", name, i+1, head.Kind, err)
		}
	}
	return o
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func load(t *testing.T, file string) objects {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, file, data)
}

func TestManifests(t *testing.T) {
	paths := adminPaths(t)
	minGrace := shutdownBound(t) + flushMargin
	for _, file := range manifests {
		t.Run(file, func(t *testing.T) {
			o := load(t, file)
			if len(o.statefulSets) != 1 {
				t.Fatalf("%d StatefulSets, want 1", len(o.statefulSets))
			}
			sts := o.statefulSets[0]
			checkStatefulSet(t, sts, paths, minGrace)
			checkPDB(t, o, sts)
			checkServices(t, o, sts)
			checkSecrets(t, o, sts)
			checkConfig(t, file, sts)
		})
	}
}

// kbrokerContainer returns the container running the kbroker image.
func kbrokerContainer(t *testing.T, sts *appsv1.StatefulSet) *corev1.Container {
	t.Helper()
	for i, c := range sts.Spec.Template.Spec.Containers {
		if c.Name == "kbroker" {
			return &sts.Spec.Template.Spec.Containers[i]
		}
	}
	t.Fatalf("StatefulSet %s has no container named kbroker", sts.Name)
	return nil
}

func checkStatefulSet(t *testing.T, sts *appsv1.StatefulSet, paths map[string]bool, minGrace time.Duration) {
	pod := sts.Spec.Template
	sel, err := metaSelector(sts.Spec.Selector.MatchLabels)
	if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("the StatefulSet's selector %v does not match its pod labels %v", sts.Spec.Selector.MatchLabels, pod.Labels)
	}
	c := kbrokerContainer(t, sts)

	// Probes: the admin listener's endpoints on a declared port.
	adminPort := envPort(t, c, "KBROKER_ADMIN_LISTENER")
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s probe: want an httpGet on %s", p.name, p.path)
			continue
		}
		g := p.probe.HTTPGet
		if g.Path != p.path {
			t.Errorf("%s probe: path %q, want %q", p.name, g.Path, p.path)
		}
		if !paths[g.Path] {
			t.Errorf("%s probe: the admin HTTP server (cluster) serves no %s", p.name, g.Path)
		}
		port, ok := containerPort(c, g.Port)
		if !ok {
			t.Errorf("%s probe: port %s is not a container port", p.name, g.Port.String())
		} else if port != adminPort {
			t.Errorf("%s probe: port %d, but admin.listener is on %d", p.name, port, adminPort)
		}
	}

	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < minGrace {
		t.Errorf("terminationGracePeriodSeconds %v: want at least %v (controlled shutdown, drain, flush)", derefInt64(g), minGrace)
	}

	// One broker per node.
	spread := false
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			s, err := metaSelector(term.LabelSelector.MatchLabels)
			if term.TopologyKey == hostnameKey && err == nil && len(term.LabelSelector.MatchLabels) > 0 && s.Matches(labels.Set(pod.Labels)) {
				spread = true
			}
		}
	}
	if !spread {
		t.Errorf("no required pod anti-affinity on %s selecting the brokers' own pods", hostnameKey)
	}

	// broker.rack from the node's zone.
	rack := false
	for _, e := range c.Env {
		if e.Name == rackEnv {
			rack = e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == zoneFieldPath
		}
	}
	if !rack {
		t.Errorf("%s must come from the downward API field %s", rackEnv, zoneFieldPath)
	}

	// Requests and limits for CPU and memory, requests within limits.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[r]
		lim, okLim := c.Resources.Limits[r]
		switch {
		case !okReq || !okLim:
			t.Errorf("resources: %s request set %v, limit set %v; want both", r, okReq, okLim)
		case req.Cmp(lim) > 0:
			t.Errorf("resources: %s request %s over its limit %s", r, req.String(), lim.String())
		}
	}

	// A volume for every log dir.
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounted[m.MountPath] = true
	}
	for _, dir := range strings.Split(envValue(c, "KBROKER_LOG_DIRS"), ",") {
		if !mounted[strings.TrimSpace(dir)] {
			t.Errorf("log dir %q is not a volume mount (the root file system is read-only)", dir)
		}
	}
}

func checkPDB(t *testing.T, o objects, sts *appsv1.StatefulSet) {
	if len(o.pdbs) != 1 {
		t.Errorf("%d PodDisruptionBudgets, want 1", len(o.pdbs))
		return
	}
	p := o.pdbs[0]
	if p.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget %s sets minAvailable; want maxUnavailable 1 only", p.Name)
	}
	if m := p.Spec.MaxUnavailable; m == nil || m.Type != intstr.Int || m.IntVal != 1 {
		t.Errorf("PodDisruptionBudget %s: maxUnavailable %v, want 1 (one broker down at a time)", p.Name, m)
	}
	if p.Spec.Selector == nil {
		t.Errorf("PodDisruptionBudget %s has no selector", p.Name)
		return
	}
	s, err := metaSelector(p.Spec.Selector.MatchLabels)
	if err != nil || len(p.Spec.Selector.MatchLabels) == 0 || !s.Matches(labels.Set(sts.Spec.Template.Labels)) {
		t.Errorf("PodDisruptionBudget %s selects %v, not the brokers' pods %v", p.Name, p.Spec.Selector.MatchLabels, sts.Spec.Template.Labels)
	}
}

func checkServices(t *testing.T, o objects, sts *appsv1.StatefulSet) {
	c := kbrokerContainer(t, sts)
	headless := false
	for _, svc := range o.services {
		s, err := metaSelector(svc.Spec.Selector)
		if err != nil || len(svc.Spec.Selector) == 0 || !s.Matches(labels.Set(sts.Spec.Template.Labels)) {
			t.Errorf("Service %s selects %v, not the brokers' pods", svc.Name, svc.Spec.Selector)
		}
		for _, p := range svc.Spec.Ports {
			target := p.TargetPort
			if target.Type == intstr.Int && target.IntVal == 0 {
				target = intstr.FromInt32(p.Port)
			}
			if _, ok := containerPort(c, target); !ok {
				t.Errorf("Service %s port %s: target %s is not a container port", svc.Name, p.Name, target.String())
			}
		}
		if svc.Name == sts.Spec.ServiceName && svc.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = true
		}
	}
	if !headless {
		t.Errorf("no headless Service named %q (the StatefulSet's serviceName)", sts.Spec.ServiceName)
	}
}

// secretName matches env names that carry a credential.
var secretName = regexp.MustCompile(`PASSWORD|PASSWD|SECRET|JAAS|TOKEN|CREDENTIAL|_KEY$|PRIVATE`)

func checkSecrets(t *testing.T, o objects, sts *appsv1.StatefulSet) {
	for _, s := range o.secrets {
		if len(s.Data) > 0 || len(s.StringData) > 0 {
			t.Errorf("Secret %s carries its data in the manifest; create it from files outside the repository", s.Name)
		}
	}
	spec := sts.Spec.Template.Spec
	secretVolumes := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			secretVolumes[v.Name] = true
		}
	}
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom == nil && secretName.MatchString(strings.ToUpper(e.Name)) &&
				!strings.HasSuffix(e.Name, "_LOCATION") && !strings.HasSuffix(e.Name, "_FILE") {
				t.Errorf("container %s: %s has a literal value; mount a Secret or use secretKeyRef", c.Name, e.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil && secretName.MatchString(strings.ToUpper(e.Name)) {
				t.Errorf("container %s: %s comes from a ConfigMap; credentials belong in a Secret", c.Name, e.Name)
			}
		}
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			if a == "--add-scram" || strings.HasPrefix(a, "--add-scram=") || strings.Contains(a, "password=") {
				t.Errorf("container %s: a credential on the command line (%q); use --add-scram-file on a Secret volume", c.Name, a)
			}
		}
		for _, m := range c.VolumeMounts {
			if secretVolumes[m.Name] && !m.ReadOnly {
				t.Errorf("container %s: Secret volume %s mounted writable", c.Name, m.Name)
			}
		}
	}
}

// checkConfig has kbroker's own config loader take the KBROKER_
// variables as pod 0 would see them: every variable must name a key, and
// the values must parse.
func checkConfig(t *testing.T, file string, sts *appsv1.StatefulSet) {
	c := kbrokerContainer(t, sts)
	pod := map[string]string{
		"metadata.name": sts.Name + "-0",
		"metadata.labels['apps.kubernetes.io/pod-index']": "0",
		zoneFieldPath: "zone-a",
	}
	env, err := resolveEnv(c.Env, pod)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load("", env, nil)
	if errors.Is(err, config.ErrUnknownKey) {
		t.Fatalf("%s: %v", file, err)
	}
	if err != nil {
		// The secure manifest's key files exist only inside the pod.
		if !strings.Contains(err.Error(), "/etc/kbroker/") {
			t.Fatalf("%s: kbroker does not load this configuration: %v", file, err)
		}
		t.Logf("%s: the configuration names files that exist only in the pod: %v", file, err)
		return
	}
	if cfg.BrokerRack != "zone-a" {
		t.Errorf("%s: broker.rack %q from the zone label, want zone-a", file, cfg.BrokerRack)
	}
}

// resolveEnv evaluates env as the kubelet would for one pod: literal
// values with $(VAR) references to earlier variables, and the downward
// API fields in pod.
func resolveEnv(env []corev1.EnvVar, pod map[string]string) ([]string, error) {
	vars := map[string]string{}
	var out []string
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for _, e := range env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
			v = ref.ReplaceAllStringFunc(v, func(m string) string {
				if val, ok := vars[m[2:len(m)-1]]; ok {
					return val
				}
				return m
			})
		case e.ValueFrom.FieldRef != nil:
			val, ok := pod[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				return nil, fmt.Errorf("env %s: downward API field %q is not one this test resolves", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			v = val
		case e.ValueFrom.SecretKeyRef != nil:
			v = "secret-from-" + e.ValueFrom.SecretKeyRef.Name
		default:
			return nil, fmt.Errorf("env %s: a source this test does not resolve", e.Name)
		}
		vars[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

func envValue(c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// envPort is the port of the host:port in env var name.
func envPort(t *testing.T, c *corev1.Container, name string) int32 {
	t.Helper()
	v := envValue(c, name)
	i := strings.LastIndexByte(v, ':')
	p, err := strconv.ParseInt(v[i+1:], 10, 32)
	if i < 0 || err != nil {
		t.Fatalf("%s=%q: want host:port", name, v)
	}
	return int32(p)
}

// containerPort resolves a probe's or Service's port against c's declared
// ports.
func containerPort(c *corev1.Container, p intstr.IntOrString) (int32, bool) {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

func metaSelector(m map[string]string) (labels.Selector, error) {
	return labels.ValidatedSelectorFromSet(m)
}

func derefInt64(p *int64) any {
	if p == nil {
		return "unset"
	}
	return *p
}

// adminPaths are the paths the admin HTTP server registers, read from the
// cluster package's source (mux.Handle and mux.HandleFunc calls).
func adminPaths(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("../../cluster/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("reading the cluster package's source: %v (%d files)", err, len(files))
	}
	re := regexp.MustCompile(`\.Handle(?:Func)?\("(/[^"]*)"`)
	paths := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(data, -1) {
			paths[string(m[1])] = true
		}
	}
	if !paths["/metrics"] {
		t.Fatalf("found no admin HTTP handlers in ../../cluster (found %v): has the admin server moved?", paths)
	}
	return paths
}

// shutdownBound is the controlled shutdown's bound plus the drain's, read
// from the cluster package's source where it still says them as
// expected, else the documented 15 s + 10 s.
func shutdownBound(t *testing.T) time.Duration {
	t.Helper()
	shutdown, drain := controlledShutdownBound, drainBound
	grab := func(file string, re *regexp.Regexp, into *time.Duration, what string) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Logf("%s: %v; using %v for the %s", file, err, *into, what)
			return
		}
		m := re.FindSubmatch(data)
		if m == nil {
			t.Logf("%s: no %s found; using %v", file, what, *into)
			return
		}
		n, _ := strconv.Atoi(string(m[1]))
		if d := time.Duration(n) * time.Second; d > *into {
			*into = d
		}
	}
	grab("../../cluster/liveness.go", regexp.MustCompile(`(?s)func \(n \*Node\) controlledShutdown\(\).*?WithTimeout\(context\.Background\(\), (\d+)\s*\*\s*time\.Second\)`),
		&shutdown, "controlled shutdown bound")
	grab("../../cluster/node.go", regexp.MustCompile(`const drainTimeout = (\d+)\s*\*\s*time\.Second`), &drain, "drain timeout")
	return shutdown + drain
}

// TestKustomization checks that kustomization.yaml lists kbroker.yaml and
// only files that exist, and, with kubectl on PATH, that `kubectl
// kustomize` renders what the manifest checks accept.
func TestKustomization(t *testing.T) {
	data, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml: %s %s", k.APIVersion, k.Kind)
	}
	if len(k.Resources) != 1 || k.Resources[0] != "kbroker.yaml" {
		t.Errorf("resources %v, want [kbroker.yaml] (the secure manifest defines the same objects)", k.Resources)
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(r); err != nil {
			t.Errorf("resource %s: %v", r, err)
		}
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH: skipping `kubectl kustomize`")
	}
	cmd := exec.Command(kubectl, "kustomize", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, stderr.Bytes())
	}
	o := decode(t, "kubectl kustomize output", out)
	if len(o.statefulSets) != 1 || len(o.pdbs) != 1 || len(o.services) != 2 || len(o.policies) != 1 {
		t.Fatalf("kubectl kustomize rendered %d StatefulSets, %d PDBs, %d Services, %d NetworkPolicies",
			len(o.statefulSets), len(o.pdbs), len(o.services), len(o.policies))
	}
	got, _ := json.Marshal(o.statefulSets[0].Spec)
	want, _ := json.Marshal(load(t, "kbroker.yaml").statefulSets[0].Spec)
	if !bytes.Equal(got, want) {
		t.Errorf("kubectl kustomize changed the StatefulSet's spec")
	}
}
