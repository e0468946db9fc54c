module github.com/flotilla-dev/flotilla/hack/tools

go 1.26.0
