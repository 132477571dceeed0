package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certs are PEM files made by WriteCerts: a CA, a server certificate for
// 127.0.0.1/localhost, and a client certificate, all signed by the CA.
type Certs struct {
	TLSFiles
	ClientCert, ClientKey string
	// OtherCA signs nothing the server trusts (for refusal tests).
	OtherClientCert, OtherClientKey string
}

// WriteCerts makes fresh keys and certificates under dir (mode 0600).
func WriteCerts(dir string) (*Certs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, caCert, caDER, err := newCA("sparkform test CA")
	if err != nil {
		return nil, err
	}
	c := &Certs{}
	c.CA = filepath.Join(dir, "ca.pem")
	if err := writePEM(c.CA, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	issue := func(name string, server bool, signer *x509.Certificate, signerKey *ecdsa.PrivateKey) (string, string, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", "", err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		}
		if server {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
			tmpl.DNSNames = []string{"localhost"}
		} else {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
		if err != nil {
			return "", "", err
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return "", "", err
		}
		cp, kp := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		if err := writePEM(cp, "CERTIFICATE", der); err != nil {
			return "", "", err
		}
		return cp, kp, writePEM(kp, "EC PRIVATE KEY", kder)
	}
	if c.ServerCert, c.ServerKey, err = issue("server", true, caCert, caKey); err != nil {
		return nil, err
	}
	if c.ClientCert, c.ClientKey, err = issue("client", false, caCert, caKey); err != nil {
		return nil, err
	}
	otherKey, otherCert, _, err := newCA("some other CA")
	if err != nil {
		return nil, err
	}
	if c.OtherClientCert, c.OtherClientKey, err = issue("other-client", false, otherCert, otherKey); err != nil {
		return nil, err
	}
	return c, nil
}

func newCA(name string) (*ecdsa.PrivateKey, *x509.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return key, cert, der, err
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
