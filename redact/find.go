package redact

import (
	"net/netip"
	"regexp"
	"strings"

	"github.com/aiconform/aiconform/report"
)

// nodes collects node names from where a report shows them as such: the NAME
// column of `kubectl get nodes`, the NODE and NOMINATED NODE columns of pod
// listings (-o wide), a computed table's NODE column, and the node names a
// `kubectl get nodes` command lists. Anywhere else a name is found by being
// one of these.
func (f findings) nodes(r *report.Report) {
	for _, req := range r.Requirements {
		for _, c := range req.Checks {
			if c.Table != nil {
				for i, h := range c.Table.Header {
					if isNodeColumn(h) {
						for _, row := range c.Table.Rows {
							if i < len(row) {
								f.node(row[i])
							}
						}
					}
				}
			}
			for _, e := range c.Evidence {
				getsNodes, names := nodeArgs(e.Command)
				for _, n := range names {
					f.node(n)
				}
				for _, t := range tablesIn(e.Output) {
					for i, h := range t.header {
						if !isNodeColumn(h) && !(h == "NAME" && getsNodes) {
							continue
						}
						for _, row := range t.rows {
							f.node(strings.TrimPrefix(row[i], "node/"))
						}
					}
				}
			}
		}
	}
}

func isNodeColumn(h string) bool {
	h = strings.ToUpper(strings.TrimSpace(h))
	return h == "NODE" || h == "NOMINATED NODE"
}

func (f findings) node(name string) {
	name = strings.TrimSpace(name)
	// kubectl's placeholders for an empty cell, and anything with a space,
	// are not names.
	if name == "" || strings.HasPrefix(name, "<") || strings.ContainsAny(name, " \t") {
		return
	}
	f.add(name, kindNode)
}

// nodeArgs says whether a kubectl get command reads nodes, and which nodes it
// names (`kubectl get nodes a b -o wide`).
func nodeArgs(command string) (getsNodes bool, names []string) {
	fields := strings.Fields(command)
	for i := 0; i+2 < len(fields); i++ {
		if fields[i] != "kubectl" || fields[i+1] != "get" {
			continue
		}
		only := true
		for _, res := range strings.Split(fields[i+2], ",") {
			switch strings.ToLower(res) {
			case "nodes", "node", "no":
				getsNodes = true
			default:
				only = false
			}
		}
		if !getsNodes || !only {
			return getsNodes, nil
		}
		for _, a := range fields[i+3:] {
			if strings.HasPrefix(a, "-") || strings.ContainsAny(a, "|'\"") {
				break
			}
			names = append(names, a)
		}
		return getsNodes, names
	}
	return false, nil
}

// The patterns of identifying values in free text. Each names its value in
// group 1.
var (
	// An AWS ARN's account: arn:aws:eks:us-west-2:123456789012:cluster/prod,
	// arn:aws:iam::123456789012:role/x. EKS names kubeconfig contexts so.
	arnRE = regexp.MustCompile(`\barn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:(\d{12}):`)
	// A private ECR registry's account: 123456789012.dkr.ecr.REGION.amazonaws.com.
	ecrRE = regexp.MustCompile(`\b(\d{12})\.dkr\.ecr\.`)
	// An EC2 instance in a node's provider id: aws:///us-west-2a/i-0abc123def4567890.
	awsProviderRE = regexp.MustCompile(`\baws:///[a-z0-9-]+/(i-[0-9a-f]{8,17})\b`)
	// An EC2 instance id of the current, 17-digit form, wherever it is.
	instanceRE = regexp.MustCompile(`\b(i-[0-9a-f]{17})\b`)
	// A GCP project in a provider id, gce://PROJECT/ZONE/INSTANCE; the
	// instance is the node's name.
	gceProviderRE = regexp.MustCompile(`\bgce://([a-z][a-z0-9-]{4,28}[a-z0-9])/[a-z0-9-]+/([a-z0-9-]+)`)
	// A GCP project in a GKE context name, gke_PROJECT_ZONE_CLUSTER.
	gkeContextRE = regexp.MustCompile(`\bgke_([a-z][a-z0-9-]{4,28}[a-z0-9])_[a-z0-9-]+_`)
	// An Azure subscription, in a provider id (azure:///subscriptions/GUID/...)
	// or any resource id.
	azureRE = regexp.MustCompile(`(?i)/subscriptions/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b`)
	// The IAM user of an eksctl context, USER@CLUSTER.REGION.eksctl.io.
	eksctlRE = regexp.MustCompile(`([A-Za-z0-9+=,._-]+)@[A-Za-z0-9-]+\.[a-z0-9-]+\.eksctl\.io\b`)
	// A URL's authority: userinfo, host and port.
	urlRE = regexp.MustCompile(`(?i)\b(?:https?|wss?)://([A-Za-z0-9._~%:@-]+)`)
	// Candidates for addresses, checked by parseIP and their surroundings.
	ipv4RE = regexp.MustCompile(`\d{1,3}(?:\.\d{1,3}){3}`)
	ipv6RE = regexp.MustCompile(`[0-9A-Fa-f:]*:[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*`)
)

// scan collects the identifying values of one text by their patterns.
func (f findings) scan(s string) {
	for _, m := range arnRE.FindAllStringSubmatch(s, -1) {
		f.add(m[1], kindAccount)
	}
	for _, m := range ecrRE.FindAllStringSubmatch(s, -1) {
		f.add(m[1], kindAccount)
	}
	for _, re := range []*regexp.Regexp{awsProviderRE, instanceRE} {
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			f.add(m[1], kindInstance)
		}
	}
	for _, m := range gceProviderRE.FindAllStringSubmatch(s, -1) {
		f.add(m[1], kindAccount)
		f.add(m[2], kindNode)
	}
	for _, m := range gkeContextRE.FindAllStringSubmatch(s, -1) {
		f.add(m[1], kindAccount)
	}
	for _, m := range azureRE.FindAllStringSubmatch(s, -1) {
		f.add(m[1], kindAccount)
	}
	for _, m := range eksctlRE.FindAllStringSubmatch(s, -1) {
		f.add(m[1], kindUser)
	}
	for _, m := range urlRE.FindAllStringSubmatch(s, -1) {
		if h := urlHost(m[1]); h != "" {
			f.add(h, kindHost)
		}
	}
	f.scanIPs(s)
}

// urlHost is the host of a URL's authority when it is a name to redact: not
// an IP address (found as such), not a single label (a Service of the same
// namespace, localhost), and not a name reserved for examples, tests or a
// cluster's own Services.
func urlHost(authority string) string {
	host := authority[strings.LastIndexByte(authority, '@')+1:]
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = strings.TrimRight(host, ".")
	if _, ok := parseIP(host); ok || !strings.Contains(host, ".") {
		return ""
	}
	lower := strings.ToLower(host)
	for _, reserved := range []string{"example", "example.com", "example.net", "example.org", "test", "invalid", "localhost", "local", "svc"} {
		if lower == reserved || strings.HasSuffix(lower, "."+reserved) {
			return ""
		}
	}
	if strings.Contains(lower, ".svc.") {
		return ""
	}
	return host
}

// scanIPs collects IPv4 and IPv6 addresses that are not part of a longer
// word or dotted number (a version like v1.2.3.4 or 1.2.3.4.5).
func (f findings) scanIPs(s string) {
	for _, loc := range ipv4RE.FindAllStringIndex(s, -1) {
		i, j := loc[0], loc[1]
		if i > 0 && (isAlnum(s[i-1]) || s[i-1] == '.') {
			continue
		}
		if j < len(s) && (isAlnum(s[j]) || s[j] == '.' && j+1 < len(s) && isDigit(s[j+1])) {
			continue
		}
		if a, ok := parseIP(s[i:j]); ok && !kept(a) {
			f.add(s[i:j], kindIPv4)
		}
	}
	for _, loc := range ipv6RE.FindAllStringIndex(s, -1) {
		i, j := loc[0], loc[1]
		if i > 0 && (isAlnum(s[i-1]) || s[i-1] == '.') {
			continue
		}
		text := strings.TrimRight(s[i:j], ".")
		a, ok := parseIP(text)
		if !ok && strings.HasSuffix(text, ":") && !strings.HasSuffix(text, "::") {
			text = strings.TrimSuffix(text, ":")
			a, ok = parseIP(text)
		}
		end := i + len(text)
		if !ok || !a.Is6() || end < len(s) && isAlnum(s[end]) || kept(a) {
			continue
		}
		f.add(text, kindIPv6)
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func parseIP(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	return a, err == nil && a.Zone() == ""
}

// keptPrefixes are addresses that identify nothing: the documentation
// ranges, which examples (and these pseudonyms' readers) expect to see.
var keptPrefixes = []netip.Prefix{
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// kept says whether an address stays: the unspecified and broadcast
// addresses, 127.0.0.1 and ::1, which every host has, and documentation
// addresses. Other loopback addresses are redacted: a node given 127.0.10.2
// was given it by someone.
func kept(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsUnspecified() || a == netip.MustParseAddr("127.0.0.1") || a == netip.IPv6Loopback() ||
		a == netip.MustParseAddr("255.255.255.255") {
		return true
	}
	for _, p := range keptPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
