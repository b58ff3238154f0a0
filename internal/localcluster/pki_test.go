package localcluster

import (
	"crypto/x509"
	"encoding/csv"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s holds no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWritePKI(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p, err := writePKI(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, filepath.Join(dir, caCertFile)))
	verify := func(name, host string, usage x509.ExtKeyUsage) error {
		_, err := readCert(t, filepath.Join(dir, name+".crt")).Verify(x509.VerifyOptions{
			Roots: roots, DNSName: host, CurrentTime: now.Add(time.Hour), KeyUsages: []x509.ExtKeyUsage{usage},
		})
		return err
	}
	// Every name a client may use for the API server: kubectl and the components (127.0.0.1), pods (the
	// kubernetes Service).
	for _, host := range []string{Host, "localhost", APIServerServiceIP, "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} {
		if err := verify(apiServerCertName, host, x509.ExtKeyUsageServerAuth); err != nil {
			t.Errorf("API server certificate for %s: %v", host, err)
		}
	}
	if err := verify(apiServerCertName, "example.com", x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("API server certificate verifies for example.com")
	}
	for _, name := range []string{schedulerCertName, controllerMgrCrtName} {
		if err := verify(name, Host, x509.ExtKeyUsageServerAuth); err != nil {
			t.Errorf("%s serving certificate: %v", name, err)
		}
	}
	if err := verify(kubeletClientName, "", x509.ExtKeyUsageClientAuth); err != nil {
		t.Errorf("kubelet client certificate: %v", err)
	}
	if got := readCert(t, filepath.Join(dir, kubeletClientName+".crt")).Subject.Organization; !slices.Equal(got, []string{"system:masters"}) {
		t.Errorf("kubelet client certificate organization %v, want system:masters", got)
	}

	// tokens.csv: token,user,uid[,groups] for each identity, matching the tokens returned.
	f, err := os.Open(filepath.Join(dir, tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, rec := range records {
		if rec[0] != p.tokens[rec[1]] || len(rec[0]) < 32 {
			t.Errorf("token of %s in the file is not the one returned, or too short", rec[1])
		}
		got = append(got, rec[1:])
	}
	want := [][]string{
		{adminUser, "1", "system:masters"},
		{kubeletUser, "2", "system:nodes"},
		{schedulerUser, "3"},
		{controllerManagerUser, "4"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tokens.csv users (-want +got):\n%s", diff)
	}

	for _, key := range []string{"ca.key", apiServerCertName + ".key", serviceAccountKey, tokenFile} {
		st, err := os.Stat(filepath.Join(dir, key))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", key, st.Mode().Perm())
		}
	}
}
