package submission

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"slices"
	"strings"
)

// PEM block types of the encodings `openssl genpkey -algorithm ed25519` and
// `openssl pkey -pubout` write: PKCS#8 and PKIX.
const (
	privateKeyType = "PRIVATE KEY"
	publicKeyType  = "PUBLIC KEY"
)

// ReadPrivateKey reads an ed25519 private key in PKCS#8 PEM from path.
func ReadPrivateKey(path string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePrivateKey(path, data)
}

// ReadPublicKey reads an ed25519 public key in PKIX PEM from path.
func ReadPublicKey(path string) (ed25519.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePublicKey(path, data)
}

// ParsePrivateKey decodes an ed25519 private key in PKCS#8 PEM; name is the
// file it came from, for messages.
func ParsePrivateKey(name string, data []byte) (ed25519.PrivateKey, error) {
	block, err := findBlock(name, data, privateKeyType)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	k, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: %s private key; want ed25519 (openssl genpkey -algorithm ed25519)", name, algorithm(key))
	}
	return k, nil
}

// ParsePublicKey decodes an ed25519 public key in PKIX PEM; name is the file
// it came from, for messages.
func ParsePublicKey(name string, data []byte) (ed25519.PublicKey, error) {
	block, err := findBlock(name, data, publicKeyType)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	k, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%s: %s public key; want ed25519", name, algorithm(key))
	}
	return k, nil
}

// MarshalPrivateKey encodes key as PKCS#8 PEM, as openssl writes it.
func MarshalPrivateKey(key ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: privateKeyType, Bytes: der}), nil
}

// MarshalPublicKey encodes key as PKIX PEM, as `openssl pkey -pubout` writes it.
func MarshalPublicKey(key ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: publicKeyType, Bytes: der}), nil
}

// findBlock returns the first PEM block of type want. When there is none it
// says what the file holds instead, because the usual mistake is the other
// half of the pair or a key from another tool (ssh-keygen, openssl genrsa).
func findBlock(name string, data []byte, want string) (*pem.Block, error) {
	var found []string
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type == want {
			return block, nil
		}
		found = append(found, block.Type)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s: no PEM block; want a %q block", name, want)
	}
	hint := ""
	switch {
	case want == privateKeyType && slices.Contains(found, publicKeyType):
		hint = "; this is a public key, signing needs the private key"
	case want == publicKeyType && slices.Contains(found, privateKeyType):
		hint = "; this is a private key, verifying takes the public key (openssl pkey -pubout)"
	case slices.Contains(found, "ENCRYPTED PRIVATE KEY"):
		hint = "; encrypted keys are not supported, decrypt it with openssl pkey"
	case slices.Contains(found, "OPENSSH PRIVATE KEY"):
		hint = "; OpenSSH keys are not supported, use openssl genpkey -algorithm ed25519"
	}
	return nil, fmt.Errorf("%s holds %s, not a %q block%s", name, strings.Join(found, ", "), want, hint)
}

// algorithm names the key type of a decoded key for messages.
func algorithm(key any) string {
	switch key.(type) {
	case *rsa.PrivateKey, *rsa.PublicKey:
		return "an RSA"
	case *ecdsa.PrivateKey, *ecdsa.PublicKey:
		return "an ECDSA"
	case *ecdh.PrivateKey, *ecdh.PublicKey:
		return "an X25519 (key agreement, not signing)"
	default:
		return fmt.Sprintf("a %T", key)
	}
}
