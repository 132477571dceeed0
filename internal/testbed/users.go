package testbed

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// The login users every bed shares. User has passwordless sudo; NoSudoUser
// has none; DockerUser has passwordless sudo and is in the docker group
// (when this machine has one), so it opens the Docker socket without sudo,
// as the user of a DGX Spark does.
const (
	User       = "sparkform-test"
	NoSudoUser = "sparkform-nosudo"
	DockerUser = "sparkform-docker"
)

const (
	usersLock   = "/tmp/sparkform-testbed-users.lock"
	sudoersFile = "/etc/sudoers.d/sparkform-test"
)

// ensureUsers creates the three users, DockerUser's docker group
// membership and the sudoers rule if missing. An flock serialises this
// across test processes starting beds at once.
func ensureUsers() error {
	f, err := os.OpenFile(usersLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("testbed: lock %s: %w", usersLock, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("testbed: lock %s: %w", usersLock, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)

	for _, u := range []string{User, NoSudoUser, DockerUser} {
		if err := ensureUser(u); err != nil {
			return err
		}
	}
	if err := ensureInGroup(DockerUser, "docker"); err != nil {
		return err
	}
	rule := []byte(User + " ALL=(ALL:ALL) NOPASSWD: ALL\n" + DockerUser + " ALL=(ALL:ALL) NOPASSWD: ALL\n")
	if old, err := os.ReadFile(sudoersFile); err == nil && bytes.Equal(old, rule) {
		return nil
	}
	if _, err := os.Stat("/etc/sudoers.d"); err != nil {
		return fmt.Errorf("%w: /etc/sudoers.d missing (apt-get install sudo): %v", ErrUnavailable, err)
	}
	tmp := sudoersFile + ".tmp"
	if err := os.WriteFile(tmp, rule, 0o440); err != nil {
		return fmt.Errorf("testbed: write sudoers rule: %w", err)
	}
	if err := os.Rename(tmp, sudoersFile); err != nil {
		return fmt.Errorf("testbed: write sudoers rule: %w", err)
	}
	return nil
}

func ensureUser(name string) error {
	if _, err := user.Lookup(name); err != nil {
		// -p '*': no password, but not locked ("!"), which sshd without
		// PAM would refuse even for public-key logins.
		out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", "--password", "*", name).CombinedOutput()
		if err != nil {
			return fmt.Errorf("testbed: useradd %s: %v: %s", name, err, out)
		}
		return nil
	}
	locked, err := isLocked(name)
	if err != nil || !locked {
		return err
	}
	if out, err := exec.Command("usermod", "--password", "*", name).CombinedOutput(); err != nil {
		return fmt.Errorf("testbed: unlock %s: %v: %s", name, err, out)
	}
	return nil
}

// ensureInGroup adds user to group when the group exists; a machine
// without Docker has no docker group, and DockerUser is then a plain sudo
// user (tests that need the socket check it themselves).
func ensureInGroup(name, group string) error {
	g, err := user.LookupGroup(group)
	if err != nil {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	ids, err := u.GroupIds()
	if err != nil {
		return fmt.Errorf("testbed: groups of %s: %w", name, err)
	}
	for _, id := range ids {
		if id == g.Gid {
			return nil
		}
	}
	if out, err := exec.Command("usermod", "--append", "--groups", group, name).CombinedOutput(); err != nil {
		return fmt.Errorf("testbed: usermod --append --groups %s %s: %v: %s", group, name, err, out)
	}
	return nil
}

// isLocked reports whether name's shadow password starts with "!".
func isLocked(name string) (bool, error) {
	b, err := os.ReadFile("/etc/shadow")
	if err != nil {
		return false, fmt.Errorf("testbed: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) >= 2 && f[0] == name {
			return strings.HasPrefix(f[1], "!"), nil
		}
	}
	return false, nil
}

func lookupIDs(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("testbed: %w", err)
	}
	if uid, err = strconv.Atoi(u.Uid); err != nil {
		return 0, 0, err
	}
	if gid, err = strconv.Atoi(u.Gid); err != nil {
		return 0, 0, err
	}
	return uid, gid, nil
}
