package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// certValidity is how long the cluster's certificates are valid; a local cluster lives for hours, but a machine
// left running over a weekend should not find its certificates expired.
const certValidity = 365 * 24 * time.Hour

// keyPair is a certificate with its private key.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// newCA makes the self-signed CA every certificate of the cluster is issued by.
func newCA(now time.Time) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gleaner-local-ca"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("signing the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA certificate: %w", err)
	}
	return &keyPair{cert: cert, key: key}, nil
}

// certSpec says what a certificate is for.
type certSpec struct {
	commonName string
	orgs       []string
	usage      x509.ExtKeyUsage
	// hosts are the DNS names and IP addresses of a serving certificate.
	hosts []string
}

// issue makes a certificate for spec signed by kp, which must be a CA.
func (kp *keyPair) issue(spec certSpec, now time.Time) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the key of %s: %w", spec.commonName, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("choosing a serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.commonName, Organization: spec.orgs},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{spec.usage},
	}
	for _, h := range spec.hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, kp.cert, key.Public(), kp.key)
	if err != nil {
		return nil, fmt.Errorf("signing the certificate of %s: %w", spec.commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate of %s: %w", spec.commonName, err)
	}
	return &keyPair{cert: cert, key: key}, nil
}

// certPEM is the certificate in PEM.
func (kp *keyPair) certPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kp.cert.Raw})
}

// write stores the pair as dir/name.crt and dir/name.key.
func (kp *keyPair) write(dir, name string) error {
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), kp.certPEM(), 0o644); err != nil {
		return fmt.Errorf("writing %s.crt: %w", name, err)
	}
	return writeKey(filepath.Join(dir, name+".key"), kp.key)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// The users the components authenticate as, with a bearer token each (tokens.csv). The names and groups are the
// ones the API server's bootstrap RBAC policy and its Node authorizer give the right permissions to.
const (
	adminUser             = "gleaner-admin"
	kubeletUser           = "system:node:" + NodeName
	schedulerUser         = "system:kube-scheduler"
	controllerManagerUser = "system:kube-controller-manager"
)

// identity is a user and its groups.
type identity struct {
	user   string
	groups []string
}

// identities are the users tokens.csv defines.
func identities() []identity {
	return []identity{
		{user: adminUser, groups: []string{"system:masters"}},
		{user: kubeletUser, groups: []string{"system:nodes"}},
		{user: schedulerUser},
		{user: controllerManagerUser},
	}
}

// newToken returns a random bearer token.
func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// pki is everything the components need to trust and authenticate each other.
type pki struct {
	ca *keyPair
	// tokens maps a user to its bearer token.
	tokens map[string]string
}

// pkiFiles are the files writePKI creates in the PKI directory.
const (
	caCertFile           = "ca.crt"
	apiServerCertName    = "apiserver"
	kubeletClientName    = "apiserver-kubelet-client"
	schedulerCertName    = "kube-scheduler"
	controllerMgrCrtName = "kube-controller-manager"
	serviceAccountKey    = "service-account.key"
	serviceAccountPub    = "service-account.pub"
	tokenFile            = "tokens.csv"
)

// writePKI creates the CA, the serving certificates of the API server, scheduler and controller manager, the API
// server's client certificate for the kubelet, the service-account signing key and one token per identity.
func writePKI(dir string, now time.Time) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	ca, err := newCA(now)
	if err != nil {
		return nil, err
	}
	if err := ca.write(dir, "ca"); err != nil {
		return nil, err
	}
	local := []string{Host, "localhost"}
	for _, c := range []struct {
		name string
		spec certSpec
	}{
		{apiServerCertName, certSpec{commonName: "kube-apiserver", usage: x509.ExtKeyUsageServerAuth, hosts: append(local,
			APIServerServiceIP, "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local")}},
		// The kubelet only trusts clients with a certificate from the CA; system:masters lets the API server
		// proxy logs, exec and port-forward.
		{kubeletClientName, certSpec{commonName: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"},
			usage: x509.ExtKeyUsageClientAuth}},
		{schedulerCertName, certSpec{commonName: "kube-scheduler", usage: x509.ExtKeyUsageServerAuth, hosts: local}},
		{controllerMgrCrtName, certSpec{commonName: "kube-controller-manager", usage: x509.ExtKeyUsageServerAuth, hosts: local}},
	} {
		kp, err := ca.issue(c.spec, now)
		if err != nil {
			return nil, err
		}
		if err := kp.write(dir, c.name); err != nil {
			return nil, err
		}
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the service-account key: %w", err)
	}
	if err := writeKey(filepath.Join(dir, serviceAccountKey), saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding the service-account public key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, serviceAccountPub), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", serviceAccountPub, err)
	}
	p := &pki{ca: ca, tokens: map[string]string{}}
	var csv []byte
	for i, id := range identities() {
		tok, err := newToken()
		if err != nil {
			return nil, err
		}
		p.tokens[id.user] = tok
		// token,user,uid[,"group1,group2"]
		csv = fmt.Appendf(csv, "%s,%s,%d", tok, id.user, i+1)
		if len(id.groups) > 0 {
			csv = fmt.Appendf(csv, ",%q", strings.Join(id.groups, ","))
		}
		csv = append(csv, '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, tokenFile), csv, 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", tokenFile, err)
	}
	return p, nil
}
