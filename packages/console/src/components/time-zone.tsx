// The time zone the console's figures are in, one choice shared by the Overview and Usage pages:
// the browser's own zone until the user picks another, kept for the tab (session storage).
import { useSyncExternalStore } from 'react';
import { timeZones } from '../pages/usage-range';

const STORAGE_KEY = 'keel.console.tz';
const listeners = new Set<() => void>();

const browserZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

const current = (): string => sessionStorage.getItem(STORAGE_KEY) ?? browserZone();

const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};

/** Sets the shared zone; every page showing it follows. */
export const setTimeZone = (zone: string): void => {
  sessionStorage.setItem(STORAGE_KEY, zone);
  for (const listener of listeners) listener();
};

/** The shared zone and its setter. */
export const useTimeZone = (): [string, (zone: string) => void] => [
  useSyncExternalStore(subscribe, current),
  setTimeZone,
];

/** The "Time zone" select, bound to the shared zone. */
export const TimeZonePicker = () => {
  const [zone, setZone] = useTimeZone();
  return (
    <label className="field">
      <span>Time zone</span>
      <select value={zone} onChange={(event) => setZone(event.target.value)}>
        {[...new Set([zone, ...timeZones()])].map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </select>
    </label>
  );
};
