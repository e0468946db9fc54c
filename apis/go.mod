module github.com/flotilla-dev/flotilla/apis

go 1.26.0
