module github.com/flotilla-dev/flotilla/kit

go 1.26.0
