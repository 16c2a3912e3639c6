# Install vouch on Windows from a release archive, no Rust needed:
#
#   irm https://github.com/OWNER/vouch/releases/latest/download/install.ps1 | iex
#
# Downloads vouch-VERSION-x86_64-pc-windows-msvc.zip and its .sha256,
# refuses it unless the checksum matches, and puts vouch.exe in
# $env:VOUCH_INSTALL_DIR (default %LOCALAPPDATA%\vouch\bin), adding that
# folder to the user's PATH. Settings, all optional: VOUCH_VERSION,
# VOUCH_INSTALL_DIR, VOUCH_REPO (OWNER/NAME), VOUCH_DOWNLOAD_URL.
$ErrorActionPreference = 'Stop'

$repo = if ($env:VOUCH_REPO) { $env:VOUCH_REPO } else { '@VOUCH_REPO@' }
$version = if ($env:VOUCH_VERSION) { $env:VOUCH_VERSION } else { 'latest' }
$dest = if ($env:VOUCH_INSTALL_DIR) { $env:VOUCH_INSTALL_DIR } else { Join-Path $env:LOCALAPPDATA 'vouch\bin' }
$target = 'x86_64-pc-windows-msvc'

if ($env:VOUCH_DOWNLOAD_URL) {
    if ($version -eq 'latest') { throw 'VOUCH_DOWNLOAD_URL needs VOUCH_VERSION' }
    $base = $env:VOUCH_DOWNLOAD_URL
} else {
    if ($repo.StartsWith('@')) { throw 'set VOUCH_REPO=OWNER/NAME (this copy was not stamped by a release)' }
    if ($version -eq 'latest') {
        $latest = Invoke-RestMethod "https://api.github.com/repos/$repo/releases/latest"
        $version = $latest.tag_name.TrimStart('v')
    }
    $base = "https://github.com/$repo/releases/download/v$version"
}
$archive = "vouch-$version-$target.zip"
$tmp = Join-Path ([IO.Path]::GetTempPath()) ([Guid]::NewGuid())
New-Item -ItemType Directory -Path $tmp | Out-Null
try {
    Invoke-WebRequest "$base/$archive" -OutFile (Join-Path $tmp $archive)
    Invoke-WebRequest "$base/$archive.sha256" -OutFile (Join-Path $tmp "$archive.sha256")
    $want = ((Get-Content (Join-Path $tmp "$archive.sha256") -Raw).Split(' ')[0]).Trim().ToLower()
    $have = (Get-FileHash (Join-Path $tmp $archive) -Algorithm SHA256).Hash.ToLower()
    if ($want -ne $have) { throw "checksum mismatch for $archive (want $want, got $have); nothing installed" }
    Expand-Archive (Join-Path $tmp $archive) -DestinationPath $tmp
    New-Item -ItemType Directory -Force -Path $dest | Out-Null
    Copy-Item (Join-Path $tmp "vouch-$version-$target\vouch.exe") (Join-Path $dest 'vouch.exe') -Force
    $path = [Environment]::GetEnvironmentVariable('Path', 'User')
    if (-not ($path -split ';' -contains $dest)) {
        [Environment]::SetEnvironmentVariable('Path', "$dest;$path", 'User')
        Write-Host "vouch install: added $dest to your PATH (new terminals see it)"
    }
    Write-Host "vouch install: installed $(& (Join-Path $dest 'vouch.exe') --version) in $dest"
} finally {
    Remove-Item -Recurse -Force $tmp
}
