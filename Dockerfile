# One image per controller: docker build --build-arg CONTROLLER=cloneset -t flotilla/cloneset-controller:dev .
# (Not built in CI: the development machines have no container engine.)
FROM golang:1.26 AS build
ARG CONTROLLER
WORKDIR /src
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/controller \
    ./controllers/${CONTROLLER}/cmd/${CONTROLLER}-controller

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/controller /controller
USER 65532:65532
ENTRYPOINT ["/controller"]
