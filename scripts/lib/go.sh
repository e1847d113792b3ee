# Which Go builds what, in one place (sourced by the build scripts; bash).
#
#   rkt 1.30.0 (scripts/build-rkt)        Debian's Go 1.19, /usr/lib/go-1.19 (golang-1.19-go):
#   cri-tools 1.26.1 (scripts/build-critest)  2018-2022 trees built in GOPATH mode or from their
#                                          vendor/, with the Go they were tested with
#   Kubernetes, cri-tools 1.34, etcd,     Go 1.26 at /usr/local/go (the machine's), modules
#   CoreDNS (scripts/build-kubernetes)    through the Go module proxy
#
# Each function puts its Go first on PATH for the rest of the calling script, and fails with
# a message if that Go is not there. Nothing else of the project picks a Go.

# The Go of the legacy trees: Debian's 1.19, installed with apt-get when missing (as root).
rkl_go_legacy() {
        local dir=/usr/lib/go-1.19/bin
        if [ ! -x "$dir/go" ]; then
                [ "$(id -u)" -eq 0 ] || { echo "go.sh: $dir/go missing; run as root to install golang-1.19-go" >&2; return 1; }
                echo "go.sh: installing golang-1.19-go" >&2
                DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-1.19-go >&2 ||
                        { apt-get update -q >&2 &&
                                DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-1.19-go >&2; } ||
                        { echo "go.sh: could not install golang-1.19-go with apt-get" >&2; return 1; }
        fi
        export PATH="$dir:$PATH" GOTOOLCHAIN=local
}

# The Go of module builds: the machine's Go 1.26 at /usr/local/go.
rkl_go_modules() {
        local dir=/usr/local/go/bin
        [ -x "$dir/go" ] || { echo "go.sh: no Go at $dir (the project's machines have Go 1.26 there)" >&2; return 1; }
        export PATH="$dir:$PATH" GOTOOLCHAIN=local
}
